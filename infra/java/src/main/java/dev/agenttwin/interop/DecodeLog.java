package dev.agenttwin.interop;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.apache.avro.file.DataFileReader;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;

/**
 * Decodes every event of an embedded data directory with Avro's reference single-object decoder.
 *
 * <p>Usage: {@code java -cp CLASSPATH dev.agenttwin.interop.DecodeLog SCHEMAS_DIR TOPICS_DIR OUT.jsonl}. Each topic
 * file (an Avro object container of log records) is read with Avro's own DataFileReader; each record's value
 * goes through BinaryMessageDecoder. One JSON line per event: topic, offset, timestamp_ms, schema name and
 * fingerprint, event id, the record's Avro body re-encoded under the current schema (base64), the record.
 */
public final class DecodeLog {
  private DecodeLog() {}

  public static void main(String[] args) throws IOException {
    if (args.length != 3) {
      System.err.println("usage: DecodeLog SCHEMAS_DIR TOPICS_DIR OUT.jsonl");
      System.exit(2);
    }
    Codec codec = new Codec(new Schemas(new File(args[0])), null);
    File[] topics = new File(args[1]).listFiles((dir, name) -> name.endsWith(".avro"));
    if (topics == null) {
      throw new IOException(args[1] + ": not a directory");
    }
    Arrays.sort(topics);
    int events = 0;
    try (PrintStream out = new PrintStream(new File(args[2]), StandardCharsets.UTF_8)) {
      for (File file : topics) {
        String topic = file.getName().replaceAll("\\.avro$", "");
        long offset = 0;
        try (DataFileReader<GenericRecord> reader = new DataFileReader<>(file, new GenericDatumReader<>())) {
          for (GenericRecord entry : reader) {
            ByteBuffer buffer = (ByteBuffer) entry.get("value");
            byte[] value = new byte[buffer.remaining()];
            buffer.get(value);
            ObjectNode node = Json.event(codec, codec.decode(value));
            node.put("topic", topic);
            node.put("offset", offset++);
            Object timestamp = entry.get("timestamp_ms");
            if (timestamp != null) {
              node.put("timestamp_ms", (Long) timestamp);
            }
            out.println(Json.MAPPER.writeValueAsString(node));
            events++;
          }
        }
      }
    }
    System.err.println("DecodeLog: " + events + " events from " + topics.length + " topics");
  }
}
