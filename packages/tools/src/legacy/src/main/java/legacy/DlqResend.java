package legacy;

import com.alibaba.fastjson.JSONObject;
import java.util.Map;
import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * What an operator does with a letter in %DLQ%&lt;group&gt; days later: finds it by its key (the
 * console's message query) and re-sends its content to the topic it came from as a new message
 * (new msgId, same body, tag, keys and user properties). Arguments: name server, consumer group,
 * key. Prints {msgId, offsetMsgId, originalMsgId, topic} of the new message.
 */
public final class DlqResend {
    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String group = args[1];
        String key = args[2];
        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(namesrv);
        admin.setInstanceName("dlq-admin-" + ProcessHandle.current().pid());
        DefaultMQProducer producer = new DefaultMQProducer("dlq-resend");
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("dlq-resend-" + ProcessHandle.current().pid());
        admin.start();
        producer.start();
        try {
            QueryResult found = admin.queryMessage(MixAll.DLQ_GROUP_TOPIC_PREFIX + group, key, 32, 0, Long.MAX_VALUE);
            MessageExt letter = found.getMessageList().stream()
                    .filter(m -> key.equals(m.getKeys()))
                    .findFirst()
                    .orElseThrow(() -> new IllegalStateException("no letter with key " + key));
            String topic = letter.getProperty(MessageConst.PROPERTY_RETRY_TOPIC);
            Message resent = new Message(topic == null ? letter.getTopic() : topic, letter.getTags(), letter.getKeys(),
                    letter.getBody());
            for (Map.Entry<String, String> p : letter.getProperties().entrySet()) {
                if (!MessageConst.STRING_HASH_SET.contains(p.getKey())) resent.putUserProperty(p.getKey(), p.getValue());
            }
            SendResult result = producer.send(resent);
            JSONObject line = new JSONObject();
            line.put("msgId", result.getMsgId());
            line.put("offsetMsgId", result.getOffsetMsgId());
            line.put("originalMsgId", letter.getMsgId());
            line.put("topic", resent.getTopic());
            System.out.println(line.toJSONString());
        } finally {
            producer.shutdown();
            admin.shutdown();
        }
    }
}
