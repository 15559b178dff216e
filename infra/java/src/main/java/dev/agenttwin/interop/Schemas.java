package dev.agenttwin.interop;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.SchemaNormalization;
import org.apache.avro.message.SchemaStore;

/** Every event schema version shipped in schemas/avro (current) and schemas/avro/old (earlier versions). */
final class Schemas {
  final Map<String, Schema> currentByName = new HashMap<>();
  final Map<Long, Schema> byFingerprint = new HashMap<>();
  final SchemaStore.Cache store = new SchemaStore.Cache();

  Schemas(File directory) throws IOException {
    for (File file : avsc(directory)) {
      Schema schema = new Schema.Parser().parse(file);
      currentByName.put(schema.getFullName(), schema);
      add(schema);
    }
    File old = new File(directory, "old");
    if (old.isDirectory()) {
      for (File file : avsc(old)) {
        add(new Schema.Parser().parse(file));
      }
    }
  }

  private void add(Schema schema) {
    byFingerprint.put(SchemaNormalization.parsingFingerprint64(schema), schema);
    store.addSchema(schema);
  }

  private static List<File> avsc(File directory) {
    List<File> files = new ArrayList<>();
    File[] listed = directory.listFiles((dir, name) -> name.endsWith(".avsc"));
    if (listed != null) {
      for (File f : listed) {
        files.add(f);
      }
    }
    files.sort(null);
    return files;
  }

  /** AgentTwin's one notation of a fingerprint: the 8 CRC-64-AVRO bytes in wire order, as hex. */
  static String fingerprintText(Schema schema) {
    try {
      return HexFormat.of().formatHex(SchemaNormalization.parsingFingerprint("CRC-64-AVRO", schema));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
