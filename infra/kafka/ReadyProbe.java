// Readiness probe used by kafka.sh when no Python with confluent_kafka is around.
// Run as a single-file program: java -cp 'lib/*' ReadyProbe.java <bootstrap> <timeout seconds>
// Exit 0 when the cluster answers DescribeCluster with at least one live broker.
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

public class ReadyProbe {
    public static void main(String[] args) throws Exception {
        long timeoutMs = (long) (Double.parseDouble(args[1]) * 1000);
        Map<String, Object> conf = Map.of(
            AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0],
            AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) timeoutMs,
            AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) timeoutMs);
        try (Admin admin = Admin.create(conf)) {
            int brokers = admin.describeCluster().nodes().get(timeoutMs, TimeUnit.MILLISECONDS).size();
            System.exit(brokers > 0 ? 0 : 1);
        }
    }
}
