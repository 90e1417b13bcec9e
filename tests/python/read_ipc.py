"""Reads Arrow IPC stream payloads the way a Python consumer would.

Usage: read_ipc.py DIR — every file in DIR is one message payload. Prints one JSON object:
{"messages": n, "rows": n, "ids": [...], "schemas": [...distinct field lists...]}.
"""
import json
import os
import sys

import pyarrow.ipc as ipc


def main(directory):
    messages = rows = 0
    ids = []
    schemas = set()
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), "rb") as f:
            reader = ipc.open_stream(f.read())
            table = reader.read_all()
        messages += 1
        rows += table.num_rows
        ids.extend(table.column("id").to_pylist())
        schemas.add(tuple(table.schema.names))
    print(json.dumps({"messages": messages, "rows": rows, "ids": ids,
                      "schemas": sorted(list(s) for s in schemas)}))


if __name__ == "__main__":
    main(sys.argv[1])
