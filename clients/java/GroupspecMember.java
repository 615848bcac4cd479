// One member of a consumer group on the Java consumer (org.apache.kafka:kafka-clients), the twin of
// clients/member.py: same arguments, same loop, same event lines on stdout (clients/events.py).
//
//   java -cp BUILD:JARS GroupspecMember --bootstrap 127.0.0.1:9092 --topic T --partitions 3 \
//        --group G --name m1 [--produce N] [--rate R] [--session-timeout-ms MS] \
//        [--heartbeat-interval-ms MS] [--instance-id ID]
//
// It makes sure the topic exists (Admin.createTopics; TopicExistsException is fine), then loops
// until SIGTERM: produce what is due (keys NAME:i, acks=all, idempotent as the producer's default),
// poll, print each record consumed, commit synchronously. The rebalance listener commits what was
// consumed of the partitions given up, then prints `revoked`; on assignment it prints `assigned`
// with consumer.groupMetadata().generationId(). An exception from poll is printed as an `error` event
// and the loop goes on; a fatal one (FencedInstanceIdException) ends the program with exit 1. SIGTERM: wake the consumer, close it (LeaveGroup)
// and the producer, print `closed`, exit 0. Compiled by scripts/build_java_client.sh; uses only
// APIs present in kafka-clients 3.9 and 4.x, so one build runs with either jar set.

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class GroupspecMember {
    private static final byte[] VALUE = new byte[100];

    private final Map<String, String> args;
    private final String name;
    private final String topic;
    private final long start = System.nanoTime();
    private final AtomicBoolean stop = new AtomicBoolean(false);
    private final Map<Integer, Long> pending = new HashMap<>();
    private volatile int generation = -1;
    private int produced = 0;
    private KafkaConsumer<byte[], byte[]> consumer;

    private GroupspecMember(Map<String, String> args) {
        this.args = args;
        this.name = need("--name");
        this.topic = need("--topic");
    }

    private String need(String key) {
        String v = args.get(key);
        if (v == null) {
            System.err.println("GroupspecMember: " + key + " is required");
            System.exit(2);
        }
        return v;
    }

    private String opt(String key, String dflt) {
        return args.getOrDefault(key, dflt);
    }

    // ------------------------------------------------------------------ events

    private static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    private static String ints(Collection<Integer> xs) {
        List<String> out = new ArrayList<>();
        for (int x : new TreeSet<>(xs)) {
            out.add(Integer.toString(x));
        }
        return "[" + String.join(", ", out) + "]";
    }

    /** One event line; `fields` is already JSON ("\"key\": value, ..."), maybe empty. */
    private synchronized void emit(String ev, String fields) {
        double t = System.currentTimeMillis() / 1000.0;
        String line = "{\"ev\": " + quote(ev) + ", \"t\": " + t + ", \"name\": " + quote(name)
            + (fields.isEmpty() ? "" : ", " + fields) + "}";
        System.out.println(line);
        System.out.flush();
    }

    // ------------------------------------------------------------------ the loop

    private int due() {
        long total = Long.parseLong(opt("--produce", "0"));
        double rate = Double.parseDouble(opt("--rate", "200"));
        long want = Math.min(total, (long) ((System.nanoTime() - start) / 1e9 * rate) + 1);
        return (int) Math.max(0, want - produced);
    }

    private void commit(Set<Integer> partitions) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (Map.Entry<Integer, Long> e : pending.entrySet()) {
            if (partitions == null || partitions.contains(e.getKey())) {
                offsets.put(new TopicPartition(topic, e.getKey()), new OffsetAndMetadata(e.getValue()));
            }
        }
        if (offsets.isEmpty()) {
            return;
        }
        double sent = System.currentTimeMillis() / 1000.0;
        try {
            consumer.commitSync(offsets);
            for (int p : partitionsOf(offsets)) {
                emit("committed", "\"partition\": " + p + ", \"offset\": "
                    + offsets.get(new TopicPartition(topic, p)).offset() + ", \"generation\": " + generation
                    + ", \"sent\": " + sent);
            }
        } catch (WakeupException e) {
            stop.set(true);
            emit("commit_failed", "\"error\": " + quote("WakeupException: stopping") + ", \"generation\": " + generation);
        } catch (RuntimeException e) {
            emit("commit_failed", "\"error\": " + quote(e.getClass().getSimpleName() + ": " + e.getMessage())
                + ", \"generation\": " + generation);
        }
        for (TopicPartition tp : offsets.keySet()) {
            pending.remove(tp.partition());
        }
    }

    private static Set<Integer> partitionsOf(Map<TopicPartition, OffsetAndMetadata> offsets) {
        Set<Integer> out = new TreeSet<>();
        for (TopicPartition tp : offsets.keySet()) {
            out.add(tp.partition());
        }
        return out;
    }

    private static Set<Integer> partitionsOf(Collection<TopicPartition> tps) {
        Set<Integer> out = new TreeSet<>();
        for (TopicPartition tp : tps) {
            out.add(tp.partition());
        }
        return out;
    }

    /** kafka-clients' version, from the properties file its jar carries (AppInfoParser moved in 4.0). */
    private static String clientsVersion() {
        Properties props = new Properties();
        try (java.io.InputStream in = KafkaConsumer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in != null) {
                props.load(in);
            }
        } catch (java.io.IOException e) {
            return "unknown";
        }
        return props.getProperty("version", "unknown");
    }

    private void ensureTopic(String bootstrap) throws InterruptedException {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, name + "-admin");
        try (Admin admin = Admin.create(props)) {
            int partitions = Integer.parseInt(opt("--partitions", "3"));
            admin.createTopics(Collections.singleton(new NewTopic(topic, partitions, (short) 1))).all().get();
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw new RuntimeException(e.getCause());
            }
        }
    }

    private void run() throws InterruptedException {
        String bootstrap = need("--bootstrap");
        emit("started", "\"client\": " + quote("java kafka-clients " + clientsVersion()));
        ensureTopic(bootstrap);

        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.CLIENT_ID_CONFIG, name + "-producer");
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        KafkaProducer<byte[], byte[]> producer =
            new KafkaProducer<>(pp, new ByteArraySerializer(), new ByteArraySerializer());

        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, need("--group"));
        cp.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, opt("--session-timeout-ms", "10000"));
        cp.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, opt("--heartbeat-interval-ms", "1000"));
        if (args.containsKey("--instance-id")) {
            cp.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, args.get("--instance-id"));
        }
        consumer = new KafkaConsumer<>(cp, new ByteArrayDeserializer(), new ByteArrayDeserializer());

        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop.set(true);
            consumer.wakeup();
            try {
                main.join(30000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));

        consumer.subscribe(Collections.singletonList(topic), new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
                Set<Integer> parts = partitionsOf(revoked);
                commit(parts);
                emit("revoked", "\"generation\": " + generation + ", \"partitions\": " + ints(parts));
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
                generation = consumer.groupMetadata().generationId();
                String instance = args.get("--instance-id");
                emit("assigned", "\"generation\": " + generation + ", \"member_id\": "
                    + quote(consumer.groupMetadata().memberId()) + ", \"instance_id\": "
                    + (instance == null ? "null" : quote(instance)) + ", \"partitions\": "
                    + ints(partitionsOf(assigned)));
            }
        });

        try {
            while (!stop.get()) {
                for (int i = due(); i > 0; i--) {
                    final String key = name + ":" + produced++;
                    producer.send(new ProducerRecord<>(topic, key.getBytes(), VALUE), (md, exc) -> {
                        if (exc != null) {
                            emit("error", "\"error\": " + quote("produce: " + exc));
                        } else {
                            emit("produced", "\"key\": " + quote(key) + ", \"partition\": " + md.partition()
                                + ", \"offset\": " + md.offset());
                        }
                    });
                }
                ConsumerRecords<byte[], byte[]> polled;
                try {
                    polled = consumer.poll(Duration.ofMillis(200));
                } catch (WakeupException e) {
                    throw e;
                } catch (FencedInstanceIdException e) {  // fatal: another process has this static member's id
                    emit("error", "\"error\": " + quote("poll: fatal: " + e.getClass().getSimpleName() + ": "
                        + e.getMessage()));
                    producer.close(Duration.ofSeconds(1));
                    Runtime.getRuntime().halt(1);
                    return;
                } catch (KafkaException e) {  // an application that logs and retries
                    emit("error", "\"error\": " + quote("poll: " + e.getClass().getSimpleName() + ": " + e.getMessage()));
                    Thread.sleep(200);
                    continue;
                }
                for (ConsumerRecord<byte[], byte[]> r : polled) {
                    String key = r.key() == null ? null : new String(r.key());
                    emit("consumed", "\"key\": " + (key == null ? "null" : quote(key)) + ", \"partition\": "
                        + r.partition() + ", \"offset\": " + r.offset() + ", \"generation\": " + generation
                        + ", \"ts\": " + r.timestamp());
                    pending.put(r.partition(), r.offset() + 1);
                }
                commit(null);
            }
        } catch (WakeupException e) {
            // SIGTERM: fall through to close
        }
        consumer.close(Duration.ofSeconds(10));  // revokes (the listener commits), then LeaveGroup
        producer.close(Duration.ofSeconds(10));
        emit("closed", "");
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = new HashMap<>();
        for (int i = 0; i < argv.length; i++) {
            if (argv[i].startsWith("--") && i + 1 < argv.length) {
                args.put(argv[i], argv[++i]);
            } else {
                System.err.println("GroupspecMember: unexpected argument " + argv[i]);
                System.exit(2);
            }
        }
        new GroupspecMember(args).run();
    }
}
