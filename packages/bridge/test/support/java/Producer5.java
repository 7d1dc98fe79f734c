import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.message.MessageBuilder;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;

/**
 * Sends messages with the official Apache RocketMQ 5 Java client (rocketmq-client-java) through a
 * 5.x proxy, as an application would. Arguments: the proxy's endpoints, then one argument per
 * message: topic, tag, keys (space-separated), body in base64 and the delivery timestamp in epoch
 * milliseconds (empty: none), separated by tabs. A delivery timestamp makes it a delay message
 * (MessageBuilder.setDeliveryTimestamp). Prints one JSON line per message: {msgId}.
 */
public class Producer5 {
    public static void main(String[] args) throws Exception {
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration configuration = ClientConfiguration.newBuilder()
            .setEndpoints(args[0])
            .enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10))
            .build();
        try (Producer producer = provider.newProducerBuilder().setClientConfiguration(configuration).build()) {
            for (int i = 1; i < args.length; i++) {
                String[] fields = args[i].split("\t", -1);
                MessageBuilder builder = provider.newMessageBuilder()
                    .setTopic(fields[0])
                    .setTag(fields[1])
                    .setKeys(fields[2].split(" "))
                    .setBody(Base64.getDecoder().decode(fields[3]));
                if (!fields[4].isEmpty()) builder.setDeliveryTimestamp(Long.parseLong(fields[4]));
                SendReceipt receipt = producer.send(builder.build());
                System.out.println("{\"msgId\":\"" + receipt.getMessageId() + "\"}");
            }
        }
    }
}
