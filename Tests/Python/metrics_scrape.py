#!/usr/bin/env python3
"""Scrapes the sandbox's GET /metrics and parses it with prometheus_client's own parser
(Tests/ServerTests/MetricsEndToEndTests.swift).

  metrics_scrape.py --url http://127.0.0.1:PORT/metrics

Prints one line of JSON: {"contentType": "...", "families": {"name": "counter", ...},
"samples": {"name{label=\"value\",...}": number, ...}} with each sample's labels sorted by name. Exits 1
(with the parser's error on stderr) when the text does not parse, when a family has no HELP, when a
sample's name does not belong to its family or a name does not start with apns_sandbox_.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def key(name: str, labels: dict[str, str]) -> str:
    inner = ",".join(f'{k}="{labels[k]}"' for k in sorted(labels))
    return f"{name}{{{inner}}}" if inner else name


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    arguments = parser.parse_args()
    with urllib.request.urlopen(arguments.url, timeout=10) as response:
        content_type = response.headers.get("content-type", "")
        text = response.read().decode("utf-8")
    families: dict[str, str] = {}
    samples: dict[str, float] = {}
    try:
        for family in text_string_to_metric_families(text):
            if not family.name.startswith("apns_sandbox_"):
                raise ValueError(f"family {family.name} is not named apns_sandbox_*")
            if not family.documentation:
                raise ValueError(f"family {family.name} has no HELP")
            if family.name in families:
                raise ValueError(f"family {family.name} appears twice")
            families[family.name] = family.type
            for sample in family.samples:
                if not sample.name.startswith(family.name):
                    raise ValueError(f"sample {sample.name} outside its family {family.name}")
                value = sample.value
                samples[key(sample.name, sample.labels)] = value if math.isfinite(value) else str(value)
    except Exception as error:  # the parser raises ValueError (and others) for malformed text
        print(f"metrics do not parse: {error}\n{text}", file=sys.stderr)
        return 1
    print(json.dumps({"contentType": content_type, "families": families, "samples": samples}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
