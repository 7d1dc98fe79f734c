import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.util.Base64;
import java.util.Map;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

/**
 * Sends messages with the official Apache RocketMQ 4.7.1 Java client, as an application would:
 * body bytes as given, keys and tag, and every property through Message.putUserProperty, which
 * refuses the client's own system names. Arguments: name server address, then a JSON array of
 * {topic, tags, keys, bodyBase64, userProperties}. Prints one JSON line per message:
 * {msgId (the client's UNIQ_KEY), offsetMsgId, queueId, queueOffset}.
 */
public class Producer471 {
    public static void main(String[] args) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("java-producer-471");
        producer.setNamesrvAddr(args[0]);
        producer.setInstanceName("java-producer-" + ProcessHandle.current().pid());
        producer.setSendMsgTimeout(10_000);
        producer.start();
        try {
            JSONArray messages = JSON.parseArray(args[1]);
            for (int i = 0; i < messages.size(); i++) {
                JSONObject spec = messages.getJSONObject(i);
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
                SendResult result = producer.send(message);
                if (result.getSendStatus() != SendStatus.SEND_OK) {
                    throw new IllegalStateException("send status " + result.getSendStatus());
                }
                JSONObject sent = new JSONObject(true);
                sent.put("msgId", result.getMsgId());
                sent.put("offsetMsgId", result.getOffsetMsgId());
                sent.put("queueId", result.getMessageQueue().getQueueId());
                sent.put("queueOffset", result.getQueueOffset());
                System.out.println(sent.toJSONString());
            }
        } finally {
            producer.shutdown();
        }
    }
}
