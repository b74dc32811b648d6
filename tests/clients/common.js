'use strict';
// Shared by the writer scripts: a seeded generator (the same data every run) and the record of
// what was handed to a client library, one JSON object per stored value on stdout:
//   {"m": measurement, "tags": {...}, "field": name, "type": "float"|"integer"|"boolean",
//    "ts": "<ns since epoch>", "value": "<JavaScript's shortest round-trip text>"}
// The test reads these records back and compares them with what the node stored.

// mulberry32: small, fast, and identical on every platform.
function makeRandom(seed) {
  let a = seed >>> 0;
  return function next() {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function makeRecorder() {
  const out = [];
  return {
    add(m, tags, field, type, tsNs, value) {
      out.push(JSON.stringify({ m, tags, field, type, ts: tsNs.toString(), value: String(value) }));
    },
    write() {
      process.stdout.write(out.join('\n') + '\n');
    },
  };
}

function parseArgs(usage) {
  const port = Number(process.argv[2]);
  const rows = Number(process.argv[3]);
  if (!Number.isInteger(port) || port <= 0 || !Number.isInteger(rows) || rows <= 0) {
    process.stderr.write(`usage: ${usage}\n`);
    process.exit(2);
  }
  return { port, rows };
}

module.exports = { makeRandom, makeRecorder, parseArgs };
