# Licensed to the Apache Software Foundation (ASF) under one
# or more contributor license agreements.  See the NOTICE file
# distributed with this work for additional information
# regarding copyright ownership.  The ASF licenses this file
# to you under the Apache License, Version 2.0 (the
# "License"); you may not use this file except in compliance
# with the License.  You may obtain a copy of the License at
#
#   http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing,
# software distributed under the License is distributed on an
# "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
# KIND, either express or implied.  See the License for the
# specific language governing permissions and limitations
# under the License.

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
