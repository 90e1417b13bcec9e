/*
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.  See the NOTICE file
 * distributed with this work for additional information
 * regarding copyright ownership.  The ASF licenses this file
 * to you under the Apache License, Version 2.0 (the
 * "License"); you may not use this file except in compliance
 * with the License.  You may obtain a copy of the License at
 *
 *   http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing,
 * software distributed under the License is distributed on an
 * "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
 * KIND, either express or implied.  See the License for the
 * specific language governing permissions and limitations
 * under the License.
 */
// Writes a RocksDB checkpoint with the RocksDB Fluss's tablet servers run (the frocksdbjni
// inside fluss-server's jar), as a Fluss KV snapshot is one: writes without a WAL, then
// Checkpoint.createCheckpoint. Run by the testkit (fluss_testkit::kv_files) as
//   java -cp fluss-server.jar KvCheckpoint.java OPS WORK_DIR CHECKPOINT_DIR [name=value ...]
// OPS is a file of operations, each a byte then its fields (big-endian lengths):
// After each checkpoint, what RocksDB itself reads from it goes to CHECKPOINT_DIR.rows: each
// key and value, in order, each an int length and its bytes.
//   'P' put (int key length, key, int value length, value), 'D' delete (key), 'S' single
//   delete (key), 'F' flush, 'C' compact every level, 'N' take a snapshot that keeps older
//   versions through later compactions, 'R' release those snapshots.
// Options (all optional): format_version, block_size, restart_interval,
// index_restart_interval, compression (per level, e.g. LZ4,LZ4,ZSTD; NO, SNAPPY, LZ4, ZSTD),
// checksum (crc32c, xxhash, xxhash64), index (binary, hash, two_level, first_key),
// data_index (binary, hash), bloom (true/false), write_buffer, target_file_size,
// level0_trigger, auto_compactions (true/false).
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataOutputStream;
import java.io.FileOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.FileInputStream;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.Checkpoint;
import org.rocksdb.ChecksumType;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.CompactRangeOptions;
import org.rocksdb.CompressionType;
import org.rocksdb.DBOptions;
import org.rocksdb.DataBlockIndexType;
import org.rocksdb.FlushOptions;
import org.rocksdb.IndexType;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksIterator;
import org.rocksdb.Snapshot;
import org.rocksdb.WriteOptions;

public class KvCheckpoint {
    public static void main(String[] args) throws Exception {
        RocksDB.loadLibrary();
        for (String line : Files.readAllLines(Paths.get(args[0]))) {
            if (!line.isEmpty()) {
                write(line.split("\t"));
            }
        }
    }

    private static void write(String[] args) throws Exception {
        Map<String, String> o = new HashMap<>();
        for (int i = 3; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            o.put(kv[0], kv[1]);
        }
        BlockBasedTableConfig table = new BlockBasedTableConfig();
        table.setFormatVersion(Integer.parseInt(o.getOrDefault("format_version", "5")));
        table.setBlockSize(Long.parseLong(o.getOrDefault("block_size", "4096")));
        table.setBlockRestartInterval(Integer.parseInt(o.getOrDefault("restart_interval", "16")));
        table.setIndexBlockRestartInterval(
                Integer.parseInt(o.getOrDefault("index_restart_interval", "1")));
        switch (o.getOrDefault("checksum", "crc32c")) {
            case "xxhash": table.setChecksumType(ChecksumType.kxxHash); break;
            case "xxhash64": table.setChecksumType(ChecksumType.kxxHash64); break;
            default: table.setChecksumType(ChecksumType.kCRC32c);
        }
        ColumnFamilyOptions cf = new ColumnFamilyOptions();
        switch (o.getOrDefault("index", "binary")) {
            case "hash":
                table.setIndexType(IndexType.kHashSearch);
                cf.useFixedLengthPrefixExtractor(2);
                break;
            case "two_level":
                table.setIndexType(IndexType.kTwoLevelIndexSearch);
                table.setMetadataBlockSize(256);
                break;
            case "first_key": table.setIndexType(IndexType.kBinarySearchWithFirstKey); break;
            default: table.setIndexType(IndexType.kBinarySearch);
        }
        if (o.getOrDefault("data_index", "binary").equals("hash")) {
            table.setDataBlockIndexType(DataBlockIndexType.kDataBlockBinaryAndHash);
        }
        if (Boolean.parseBoolean(o.getOrDefault("bloom", "true"))) {
            table.setFilterPolicy(new BloomFilter(10, false));
        }
        cf.setTableFormatConfig(table);
        List<CompressionType> levels = new ArrayList<>();
        for (String name : o.getOrDefault("compression", "LZ4").split(",")) {
            switch (name) {
                case "NO": levels.add(CompressionType.NO_COMPRESSION); break;
                case "SNAPPY": levels.add(CompressionType.SNAPPY_COMPRESSION); break;
                case "ZSTD": levels.add(CompressionType.ZSTD_COMPRESSION); break;
                default: levels.add(CompressionType.LZ4_COMPRESSION);
            }
        }
        cf.setCompressionPerLevel(levels);
        cf.setWriteBufferSize(Long.parseLong(o.getOrDefault("write_buffer", "67108864")));
        cf.setTargetFileSizeBase(Long.parseLong(o.getOrDefault("target_file_size", "67108864")));
        cf.setLevel0FileNumCompactionTrigger(
                Integer.parseInt(o.getOrDefault("level0_trigger", "4")));
        cf.setDisableAutoCompactions(
                !Boolean.parseBoolean(o.getOrDefault("auto_compactions", "true")));
        DBOptions db = new DBOptions().setCreateIfMissing(true).setUseFsync(false);
        List<ColumnFamilyHandle> handles = new ArrayList<>();
        List<Snapshot> held = new ArrayList<>();
        try (RocksDB rocks = RocksDB.open(db, args[1],
                Arrays.asList(new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY, cf)),
                handles);
                WriteOptions write = new WriteOptions().setDisableWAL(true);
                DataInputStream in = new DataInputStream(
                        new BufferedInputStream(new FileInputStream(args[0]), 1 << 20))) {
            ColumnFamilyHandle h = handles.get(0);
            while (true) {
                int op;
                try {
                    op = in.readUnsignedByte();
                } catch (EOFException end) {
                    break;
                }
                switch (op) {
                    case 'P': rocks.put(h, write, bytes(in), bytes(in)); break;
                    case 'D': rocks.delete(h, write, bytes(in)); break;
                    case 'S': rocks.singleDelete(h, write, bytes(in)); break;
                    case 'F':
                        try (FlushOptions flush = new FlushOptions().setWaitForFlush(true)) {
                            rocks.flush(flush, h);
                        }
                        break;
                    case 'C':
                        try (CompactRangeOptions all = new CompactRangeOptions()) {
                            rocks.compactRange(h, null, null, all);
                        }
                        break;
                    case 'N': held.add(rocks.getSnapshot()); break;
                    case 'R':
                        for (Snapshot s : held) rocks.releaseSnapshot(s);
                        held.clear();
                        break;
                    default: throw new IllegalArgumentException("unknown operation " + op);
                }
            }
            try (Checkpoint checkpoint = Checkpoint.create(rocks)) {
                checkpoint.createCheckpoint(args[2]);
            }
            for (Snapshot s : held) rocks.releaseSnapshot(s);
            for (ColumnFamilyHandle handle : handles) handle.close();
        }
        dump(args[2]);
    }

    /** Writes what RocksDB reads from the checkpoint in DIR to DIR.rows: each key and value. */
    private static void dump(String dir) throws Exception {
        try (Options options = new Options();
                RocksDB rocks = RocksDB.openReadOnly(options, dir);
                RocksIterator rows = rocks.newIterator();
                DataOutputStream out = new DataOutputStream(new BufferedOutputStream(
                        new FileOutputStream(dir + ".rows"), 1 << 20))) {
            for (rows.seekToFirst(); rows.isValid(); rows.next()) {
                out.writeInt(rows.key().length);
                out.write(rows.key());
                out.writeInt(rows.value().length);
                out.write(rows.value());
            }
            rows.status();
        }
    }

    private static byte[] bytes(DataInputStream in) throws Exception {
        byte[] b = new byte[in.readInt()];
        in.readFully(b);
        return b;
    }
}
