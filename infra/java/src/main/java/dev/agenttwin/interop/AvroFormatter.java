package dev.agenttwin.interop;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.MessageFormatter;
import org.apache.kafka.common.header.Header;

/**
 * Kafka console consumer formatter: one JSON line per record, its value decoded in either framing.
 *
 * <p>{@code --formatter dev.agenttwin.interop.AvroFormatter --formatter-property schemas.dir=schemas/avro
 * [--formatter-property schema.registry.url=http://...]}. A value that does not decode prints an "error".
 */
public final class AvroFormatter implements MessageFormatter {
  private Codec codec;

  @Override
  public void configure(Map<String, ?> configs) {
    Object dir = configs.get("schemas.dir");
    Object registry = configs.get("schema.registry.url");
    try {
      codec = new Codec(new Schemas(new File(dir == null ? "schemas/avro" : dir.toString())),
          registry == null ? null : registry.toString());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void writeTo(ConsumerRecord<byte[], byte[]> record, PrintStream output) {
    ObjectNode node;
    try {
      node = Json.event(codec, codec.decode(record.value()));
    } catch (IOException | RuntimeException e) {
      node = Json.MAPPER.createObjectNode();
      node.put("error", e.toString());
    }
    node.put("topic", record.topic());
    node.put("partition", record.partition());
    node.put("offset", record.offset());
    node.put("timestamp_ms", record.timestamp());
    node.put("timestamp_type", record.timestampType().toString());
    node.put("key", record.key() == null ? null : new String(record.key(), StandardCharsets.UTF_8));
    ObjectNode headers = node.putObject("headers");
    for (Header header : record.headers()) {
      headers.put(header.key(), header.value() == null ? null : new String(header.value(), StandardCharsets.UTF_8));
    }
    try {
      output.println(Json.MAPPER.writeValueAsString(node));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
