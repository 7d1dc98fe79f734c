package legacy;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONObject;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.SQLIntegrityConstraintViolationException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.regex.Pattern;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.protocol.heartbeat.MessageModel;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.params.SetParams;

/**
 * The legacy points consumer of the incident article, as a team runs it today on RocketMQ 4.7.1:
 * a clustering DefaultMQPushConsumer (CONSUME_FROM_FIRST_OFFSET), and per message one JDBC
 * transaction that inserts the dedup row into t_point_record (order_no UNIQUE) and awards the
 * points (account + detail line). A duplicate key means "already done": success, so the broker
 * stops redelivering. Any other failure rolls back and returns RECONSUME_LATER (%RETRY%, then
 * %DLQ% after maxReconsumeTimes).
 *
 * dedup=redis is the article's high-rate variant: SET mq:dedup:point:<orderNo> 1 NX EX 86400
 * first, the award after, and the key deleted when the award fails.
 *
 * Arguments are key=value: namesrv, group, topic, tags, jdbc (jdbc:mariadb://...), dedup
 * (mysql|redis), redis (host:port), keyPrefix, keyTtlSeconds, maxReconsumeTimes, threads,
 * persistOffsetMs. Faults for tests, each a regex on the order number: failAlways (every
 * delivery fails), failFirst (the first delivery fails), failAfterCommit (the award commits,
 * then the delivery fails: a %RETRY% copy of an awarded order), holdAfterAward (the award
 * commits and the thread never returns: the offset cannot move past it until the process dies),
 * failAfterCommitAlways (the award commits on the first delivery, then every delivery fails, the
 * duplicates too: a %DLQ% letter of an awarded order, as a notification that keeps failing leaves).
 * One JSON line per event on standard output.
 */
public final class PointConsumer {
    private static final Pattern NEVER = Pattern.compile("(?!)");

    private final Map<String, String> conf;
    private final ThreadLocal<Connection> connections = new ThreadLocal<>();
    private final Pattern failAlways;
    private final Pattern failFirst;
    private final Pattern failAfterCommit;
    private final Pattern failAfterCommitAlways;
    private final Pattern holdAfterAward;
    private final JedisPooled redis;

    private PointConsumer(Map<String, String> conf) {
        this.conf = conf;
        this.failAlways = pattern("failAlways");
        this.failFirst = pattern("failFirst");
        this.failAfterCommit = pattern("failAfterCommit");
        this.failAfterCommitAlways = pattern("failAfterCommitAlways");
        this.holdAfterAward = pattern("holdAfterAward");
        if ("redis".equals(conf.getOrDefault("dedup", "mysql"))) {
            String[] hostPort = conf.get("redis").split(":");
            this.redis = new JedisPooled(hostPort[0], Integer.parseInt(hostPort[1]));
        } else {
            this.redis = null;
        }
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> conf = new HashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            conf.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        new PointConsumer(conf).run();
    }

    private void run() throws Exception {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(conf.get("group"));
        consumer.setNamesrvAddr(conf.get("namesrv"));
        consumer.setInstanceName("legacy-" + ProcessHandle.current().pid());
        consumer.setMessageModel(MessageModel.CLUSTERING);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        int threads = Integer.parseInt(conf.getOrDefault("threads", "2"));
        consumer.setConsumeThreadMin(threads);
        consumer.setConsumeThreadMax(threads);
        consumer.setMaxReconsumeTimes(Integer.parseInt(conf.getOrDefault("maxReconsumeTimes", "16")));
        consumer.setPersistConsumerOffsetInterval(Integer.parseInt(conf.getOrDefault("persistOffsetMs", "5000")));
        consumer.subscribe(conf.getOrDefault("topic", "ORDER_TOPIC"), conf.getOrDefault("tags", "PAID"));
        consumer.registerMessageListener((MessageListenerConcurrently) this::consume);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            consumer.shutdown();
            emit("stopped", Map.of());
            stopped.countDown();
        }));
        consumer.start();
        emit("started", Map.of("group", conf.get("group")));
        stopped.await();
    }

    private ConsumeConcurrentlyStatus consume(List<MessageExt> msgs, ConsumeConcurrentlyContext context) {
        for (MessageExt msg : msgs) {
            JSONObject order = JSON.parseObject(new String(msg.getBody(), StandardCharsets.UTF_8));
            String orderNo = order.getString("orderNo");
            Map<String, Object> fields = new HashMap<>();
            fields.put("orderNo", orderNo);
            fields.put("msgId", msg.getMsgId());
            fields.put("reconsumeTimes", msg.getReconsumeTimes());
            fields.put("queueId", msg.getQueueId());
            fields.put("topic", msg.getTopic());
            try {
                if (failAlways.matcher(orderNo).find()
                        || (failFirst.matcher(orderNo).find() && msg.getReconsumeTimes() == 0)) {
                    throw new IllegalStateException("the account service is unavailable");
                }
                boolean awarded = redis == null
                        ? handleWithRecordTable(orderNo, order.getLongValue("userId"), order.getIntValue("points"), msg)
                        : handleWithRedisKey(orderNo, order.getLongValue("userId"), order.getIntValue("points"), msg);
                emit(awarded ? "awarded" : "duplicate", fields);
                if (awarded && failAfterCommit.matcher(orderNo).find() && msg.getReconsumeTimes() == 0) {
                    throw new IllegalStateException("the notification after the award failed");
                }
                if (failAfterCommitAlways.matcher(orderNo).find()) {
                    throw new IllegalStateException("the notification after the award keeps failing");
                }
                if (awarded && holdAfterAward.matcher(orderNo).find()) {
                    emit("held", fields);
                    new CountDownLatch(1).await();
                }
            } catch (Exception e) {
                fields.put("error", e.getMessage());
                emit("failed", fields);
                return ConsumeConcurrentlyStatus.RECONSUME_LATER;
            }
        }
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
    }

    /** The article's 方案一: dedup row and award in one local transaction; a duplicate key is success. */
    private boolean handleWithRecordTable(String orderNo, long userId, int point, MessageExt msg) throws SQLException {
        Connection c = connection();
        try {
            try (PreparedStatement insert = c.prepareStatement(
                    "INSERT INTO t_point_record (order_no, user_id, point) VALUES (?, ?, ?)")) {
                insert.setString(1, orderNo);
                insert.setLong(2, userId);
                insert.setInt(3, point);
                insert.executeUpdate();
            } catch (SQLIntegrityConstraintViolationException duplicateKey) {
                c.rollback();
                return false;
            }
            award(c, orderNo, userId, point, msg);
            c.commit();
            return true;
        } catch (SQLException e) {
            c.rollback();
            throw e;
        }
    }

    /** The article's 方案二: SET NX EX first; the business after; the key deleted when it fails. */
    private boolean handleWithRedisKey(String orderNo, long userId, int point, MessageExt msg) throws SQLException {
        String key = conf.getOrDefault("keyPrefix", "mq:dedup:point:") + orderNo;
        long ttl = Long.parseLong(conf.getOrDefault("keyTtlSeconds", "86400"));
        if (!"OK".equals(redis.set(key, "1", SetParams.setParams().nx().ex(ttl)))) return false;
        Connection c = connection();
        try {
            award(c, orderNo, userId, point, msg);
            c.commit();
            return true;
        } catch (SQLException e) {
            c.rollback();
            redis.del(key);
            throw e;
        }
    }

    private void award(Connection c, String orderNo, long userId, int point, MessageExt msg) throws SQLException {
        try (PreparedStatement account = c.prepareStatement(
                "INSERT INTO t_point_account (user_id, balance) VALUES (?, ?) "
                        + "ON DUPLICATE KEY UPDATE balance = balance + VALUES(balance)")) {
            account.setLong(1, userId);
            account.setLong(2, point);
            account.executeUpdate();
        }
        try (PreparedStatement detail = c.prepareStatement(
                "INSERT INTO t_point_detail (user_id, order_no, point, msg_id) VALUES (?, ?, ?, ?)")) {
            detail.setLong(1, userId);
            detail.setString(2, orderNo);
            detail.setInt(3, point);
            detail.setString(4, msg.getMsgId());
            detail.executeUpdate();
        }
    }

    private Connection connection() throws SQLException {
        Connection c = connections.get();
        if (c == null || !c.isValid(1)) {
            c = DriverManager.getConnection(conf.get("jdbc"));
            c.setAutoCommit(false);
            connections.set(c);
        }
        return c;
    }

    private Pattern pattern(String name) {
        String regex = conf.get(name);
        return regex == null || regex.isEmpty() ? NEVER : Pattern.compile(regex);
    }

    private static synchronized void emit(String event, Map<String, ?> fields) {
        JSONObject line = new JSONObject(new HashMap<>(fields));
        line.put("event", event);
        line.put("at", System.currentTimeMillis());
        System.out.println(line.toJSONString());
        System.out.flush();
    }
}
