import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

/**
 * Sends messages with the official Apache RocketMQ 4.7.1 Java client, as an application would:
 * body bytes as given, keys and tag, every property through Message.putUserProperty, which
 * refuses the client's own system names, and a delay level through Message.setDelayTimeLevel.
 * Arguments: name server address, then a JSON array of {topic, tags, keys, bodyBase64,
 * userProperties, delayTimeLevel, batch}. Consecutive messages with the same `batch` go in one
 * send(Collection), which the broker stores under one store timestamp. Prints one JSON line per
 * message: {msgId (the client's UNIQ_KEY), offsetMsgId, queueId, queueOffset}.
 */
public class Producer471 {
    public static void main(String[] args) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("java-producer-471");
        producer.setNamesrvAddr(args[0]);
        producer.setInstanceName("java-producer-" + ProcessHandle.current().pid());
        producer.setSendMsgTimeout(10_000);
        producer.start();
        try {
            JSONArray specs = JSON.parseArray(args[1]);
            List<Message> batch = new ArrayList<>();
            String batchId = null;
            for (int i = 0; i < specs.size(); i++) {
                JSONObject spec = specs.getJSONObject(i);
                String id = spec.getString("batch");
                if (!batch.isEmpty() && (id == null || !id.equals(batchId))) {
                    print(producer.send(batch), batch.size());
                    batch.clear();
                }
                batchId = id;
                Message message = messageOf(spec);
                if (id != null) {
                    batch.add(message);
                } else {
                    print(producer.send(message), 1);
                }
            }
            if (!batch.isEmpty()) print(producer.send(batch), batch.size());
        } finally {
            producer.shutdown();
        }
    }

    private static Message messageOf(JSONObject spec) {
        Message message = new Message(
            spec.getString("topic"),
            spec.getString("tags"),
            spec.getString("keys"),
            Base64.getDecoder().decode(spec.getString("bodyBase64")));
        JSONObject properties = spec.getJSONObject("userProperties");
        if (properties != null) {
            for (Map.Entry<String, Object> property : properties.entrySet()) {
                message.putUserProperty(property.getKey(), String.valueOf(property.getValue()));
            }
        }
        Integer delayTimeLevel = spec.getInteger("delayTimeLevel");
        if (delayTimeLevel != null) message.setDelayTimeLevel(delayTimeLevel);
        return message;
    }

    /** A batch's result joins its messages' ids with commas and gives the first one's queue offset. */
    private static void print(SendResult result, int count) {
        if (result.getSendStatus() != SendStatus.SEND_OK) {
            throw new IllegalStateException("send status " + result.getSendStatus());
        }
        String[] msgIds = result.getMsgId().split(",");
        String[] offsetMsgIds = result.getOffsetMsgId().split(",");
        for (int i = 0; i < count; i++) {
            JSONObject sent = new JSONObject(true);
            sent.put("msgId", msgIds[i]);
            sent.put("offsetMsgId", offsetMsgIds[i]);
            sent.put("queueId", result.getMessageQueue().getQueueId());
            sent.put("queueOffset", result.getQueueOffset() + i);
            System.out.println(sent.toJSONString());
        }
    }
}
