import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { buildApp, REPOSITORY_ROOT } from '@rocketmq-lambda/infra/index.ts';
import { App, cx_api, cloud_assembly_schema as schema } from 'aws-cdk-lib';

/**
 * The bridge image's build context exactly as CDK ships it: the app synthesised with a stage whose
 * bridge is enabled, and the directory CDK staged for the docker image asset (`asset.<hash>/`,
 * the repository filtered by the asset's `exclude` list), found through the cloud assembly's asset
 * manifests. At deploy time `cdk-assets` runs `docker build` in that directory, so whatever the
 * image needs and the exclude list leaves out is missing here too.
 */
export interface BridgeImageContext {
  readonly directory: string;
  /** The Dockerfile's path inside `directory`. */
  readonly dockerFile: string;
  readonly assetHash: string;
  readonly bytes: number;
  readonly files: number;
  readonly synthMs: number;
}

/** The assembly holds no single bridge image, or the image is built with options the replay does not model. */
export class BridgeImageAssetError extends Error {
  override readonly name = 'BridgeImageAssetError';
}

/** Any valid network will do: the image's asset hash covers only the context and the Dockerfile. */
const BRIDGE_SETTINGS = {
  enabled: true,
  endpoints: 'rocketmq-proxy.internal:8081',
  vpcId: 'vpc-0a1b2c3d4e5f60718',
  subnets: [{ id: 'subnet-0a1b2c3d4e5f60711', availabilityZone: 'ap-northeast-1a' }],
};

/** Options of `docker build` a Dockerfile replay cannot honour: they change what is built. */
const UNMODELLED_BUILD_OPTIONS = [
  'dockerBuildArgs',
  'dockerBuildTarget',
  'dockerBuildContexts',
  'dockerBuildSecrets',
  'dockerBuildSsh',
] as const;

export function stageBridgeImageContext(outdir: string): BridgeImageContext {
  const started = performance.now();
  const cdkContext = JSON.parse(readFileSync(path.join(REPOSITORY_ROOT, 'cdk.json'), 'utf8')).context;
  const rocketmq = cdkContext.rocketmq;
  const context = {
    ...cdkContext,
    rocketmq: {
      ...rocketmq,
      stages: { ...rocketmq.stages, test: { ...rocketmq.stages.test, bridge: BRIDGE_SETTINGS } },
    },
    // Skips the Lambda functions' esbuild bundling only; image assets are staged all the same.
    [cx_api.BUNDLING_STACKS]: [],
  };
  // As the CLI synthesises (version reporting on); stack traces would only slow it down.
  buildApp(new App({ context, outdir, analyticsReporting: true, stackTraces: false })).app.synth();
  const synthMs = Math.round(performance.now() - started);

  const images = new Map(dockerImageAssets(outdir));
  if (images.size !== 1)
    throw new BridgeImageAssetError(`expected one docker image asset (the bridge's), found ${images.size}`);
  const [assetHash, { source, manifestDirectory }] = [...images][0]!;
  const unmodelled = UNMODELLED_BUILD_OPTIONS.filter((option) => source[option] !== undefined);
  if (unmodelled.length > 0)
    throw new BridgeImageAssetError(
      `the bridge image is built with ${unmodelled.join(', ')}, which the replay does not model`,
    );
  if (!source.directory) throw new BridgeImageAssetError('the bridge image asset has no staged directory');
  const directory = path.resolve(manifestDirectory, source.directory);
  return { directory, dockerFile: source.dockerFile ?? 'Dockerfile', assetHash, ...directorySize(directory), synthMs };
}

interface DockerImageAsset {
  readonly source: schema.DockerImageSource;
  /** Paths in the asset manifest are relative to its own directory. */
  readonly manifestDirectory: string;
}

/** Every docker image asset of the assembly in `directory` and its nested assemblies (the pipeline's stages). */
function dockerImageAssets(directory: string): [string, DockerImageAsset][] {
  const manifest = schema.Manifest.loadAssemblyManifest(path.join(directory, 'manifest.json'));
  // An artifact's type says which of the schema's property shapes it carries.
  return Object.values(manifest.artifacts ?? {}).flatMap((artifact): [string, DockerImageAsset][] => {
    if (artifact.type === schema.ArtifactType.NESTED_CLOUD_ASSEMBLY) {
      return dockerImageAssets(
        path.join(directory, (artifact.properties as schema.NestedCloudAssemblyProperties).directoryName),
      );
    }
    if (artifact.type === schema.ArtifactType.ASSET_MANIFEST) {
      const assets = schema.Manifest.loadAssetManifest(
        path.join(directory, (artifact.properties as schema.AssetManifestProperties).file),
      );
      return Object.entries(assets.dockerImages ?? {}).map(([hash, image]) => [
        hash,
        { source: image.source, manifestDirectory: directory },
      ]);
    }
    return [];
  });
}

function directorySize(directory: string): { bytes: number; files: number } {
  const files = readdirSync(directory, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile());
  return {
    bytes: files.reduce((sum, entry) => sum + statSync(path.join(entry.parentPath, entry.name)).size, 0),
    files: files.length,
  };
}
