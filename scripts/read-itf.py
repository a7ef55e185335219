#!/usr/bin/env python3
"""Reads every ITF trace of a JSON-lines file with itf-py (Informal Systems' reader of Apalache
and Quint traces): each must parse, and its states must hold the variables its header names.

    python3 scripts/read-itf.py TRACES.itf.jsonl
"""
import json
import sys

from itf_py import trace_from_json


def main(path: str) -> int:
    traces = states = 0
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            try:
                trace = trace_from_json(json.loads(line))
            except Exception as e:  # itf-py raises ValueError, KeyError, TypeError
                print(f"{path}:{number}: itf-py cannot read this trace: {e!r}", file=sys.stderr)
                return 1
            for state in trace.states:
                if set(state.values) != set(trace.vars):
                    print(f"{path}:{number}: a state's variables differ from the header's", file=sys.stderr)
                    return 1
            traces += 1
            states += len(trace.states)
    if traces == 0:
        print(f"{path}: no trace", file=sys.stderr)
        return 1
    print(f"itf-py read {traces} traces, {states} states")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
