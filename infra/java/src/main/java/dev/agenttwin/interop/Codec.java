package dev.agenttwin.interop;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.message.BinaryMessageDecoder;
import org.apache.avro.util.Utf8;

/** Decodes a value in either framing: Avro single-object (C3 01 + fingerprint) or Confluent (00 + id). */
final class Codec {
  /** One decoded value: the record (resolved to the current schema), the writer schema and its framing. */
  record Decoded(GenericRecord record, Schema writer, String framing, Integer schemaId) {}

  private final Schemas schemas;
  private final String registryUrl;
  private final Map<String, BinaryMessageDecoder<GenericRecord>> decoders = new HashMap<>();
  private final Map<Integer, Schema> registered = new HashMap<>();
  private final HttpClient http = HttpClient.newHttpClient();

  Codec(Schemas schemas, String registryUrl) {
    this.schemas = schemas;
    this.registryUrl = registryUrl;
  }

  Decoded decode(byte[] value) throws IOException {
    if (value.length >= 10 && (value[0] & 0xff) == 0xC3 && value[1] == 0x01) {
      long fingerprint = ByteBuffer.wrap(value, 2, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
      Schema writer = schemas.byFingerprint.get(fingerprint);
      if (writer == null) {
        // AgentTwin's one notation: the 8 fingerprint bytes in wire order, as hex
        throw new IOException("no schema with fingerprint " + HexFormat.of().formatHex(value, 2, 10));
      }
      Schema reader = schemas.currentByName.get(writer.getFullName());
      // The reference single-object decoder: it finds the writer in the store by the header's fingerprint.
      BinaryMessageDecoder<GenericRecord> decoder = decoders.computeIfAbsent(
          reader.getFullName(), n -> new BinaryMessageDecoder<>(GenericData.get(), reader, schemas.store));
      return new Decoded(decoder.decode(value), writer, "single-object", null);
    }
    if (value.length >= 5 && value[0] == 0x00) {
      int id = ByteBuffer.wrap(value, 1, 4).order(ByteOrder.BIG_ENDIAN).getInt();
      Schema writer = registered(id);
      Schema reader = schemas.currentByName.getOrDefault(writer.getFullName(), writer);
      GenericDatumReader<GenericRecord> datum = new GenericDatumReader<>(writer, reader);
      GenericRecord record = datum.read(null, DecoderFactory.get().binaryDecoder(value, 5, value.length - 5, null));
      return new Decoded(record, writer, "confluent", id);
    }
    throw new IOException("neither Avro single-object nor Confluent framing");
  }

  private Schema registered(int id) throws IOException {
    Schema known = registered.get(id);
    if (known != null) {
      return known;
    }
    if (registryUrl == null) {
      throw new IOException("Confluent-framed value (schema id " + id + ") and no schema.registry.url");
    }
    try {
      HttpRequest request = HttpRequest.newBuilder(URI.create(registryUrl.replaceAll("/+$", "") + "/schemas/ids/" + id))
          .header("Accept", "application/vnd.schemaregistry.v1+json").build();
      HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
      if (response.statusCode() != 200) {
        throw new IOException("schema registry: id " + id + ": HTTP " + response.statusCode());
      }
      String text = Json.MAPPER.readTree(response.body()).get("schema").asText();
      Schema schema = new Schema.Parser().parse(text);
      registered.put(id, schema);
      return schema;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException(e);
    }
  }

  /**
   * The record's Avro binary body under the current schema of its name, map entries in key order (a map's
   * order is not part of its value): any reader of the same record gets the same bytes.
   */
  byte[] body(GenericRecord record) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
    new GenericDatumWriter<Object>(record.getSchema()).write(sortedMaps(record.getSchema(), record), encoder);
    encoder.flush();
    return out.toByteArray();
  }

  private static Object sortedMaps(Schema schema, Object value) {
    if (value == null) {
      return null;
    }
    switch (schema.getType()) {
      case RECORD: {
        GenericRecord in = (GenericRecord) value;
        GenericData.Record copy = new GenericData.Record(schema);
        for (Schema.Field f : schema.getFields()) {
          copy.put(f.pos(), sortedMaps(f.schema(), in.get(f.pos())));
        }
        return copy;
      }
      case MAP: {
        Map<Utf8, Object> sorted = new TreeMap<>();
        for (Map.Entry<?, ?> e : ((Map<?, ?>) value).entrySet()) {
          sorted.put(new Utf8(e.getKey().toString()), sortedMaps(schema.getValueType(), e.getValue()));
        }
        return sorted;
      }
      case ARRAY: {
        List<Object> items = new ArrayList<>();
        for (Object item : (Collection<?>) value) {
          items.add(sortedMaps(schema.getElementType(), item));
        }
        return items;
      }
      case UNION:
        return sortedMaps(schema.getTypes().get(GenericData.get().resolveUnion(schema, value)), value);
      default:
        return value;
    }
  }
}
