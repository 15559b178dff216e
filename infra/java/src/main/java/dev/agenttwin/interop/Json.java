package dev.agenttwin.interop;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.Base64;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;

/** One JSON line per event. */
final class Json {
  static final ObjectMapper MAPPER = new ObjectMapper();

  private Json() {}

  static ObjectNode event(Codec codec, Codec.Decoded decoded) throws IOException {
    GenericRecord record = decoded.record();
    ObjectNode node = MAPPER.createObjectNode();
    node.put("schema_name", decoded.writer().getFullName());
    node.put("schema_fingerprint", Schemas.fingerprintText(decoded.writer()));
    node.put("framing", decoded.framing());
    if (decoded.schemaId() != null) {
      node.put("schema_id", decoded.schemaId());
    }
    node.put("event_id", String.valueOf(record.get("event_id")));
    node.put("body_base64", Base64.getEncoder().encodeToString(codec.body(record)));
    node.set("record", MAPPER.readTree(GenericData.get().toString(record)));
    return node;
  }
}
