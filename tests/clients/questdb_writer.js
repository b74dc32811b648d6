'use strict';
// Writes `rows` rows of line protocol over TCP to 127.0.0.1:<port> with QuestDB's Node.js client
// (protocol version 1: plain text), the way its users do: symbols (tags), floats (including whole
// numbers, written without a decimal point, and exponent forms), `i` integers, booleans, a string
// column (not stored by Ingot) and nanosecond timestamps. Prints what it sent (see common.js).
//
// usage: node questdb_writer.js <port> <rows>     (NODE_PATH must hold the installed modules)
const { Sender } = require('@questdb/nodejs-client');
const { makeRandom, makeRecorder, parseArgs } = require('./common');

async function main() {
  const { port, rows } = parseArgs('node questdb_writer.js <port> <rows>');
  const random = makeRandom(20240601);
  const record = makeRecorder();
  const symbols = ['BTC-USD', 'ETH-USD', 'with space', 'com,ma', 'eq=ual', 'ünï'];
  const sides = ['buy', 'sell'];
  // The client logs connects and closes; keep stdout for the record.
  const log = (level, message) => process.stderr.write(`questdb client ${level}: ${message}\n`);
  const sender = await Sender.fromConfig(
    `tcp::addr=127.0.0.1:${port};protocol_version=1;auto_flush_rows=500`, { log });
  await sender.connect();
  const base = 1700000000000000000n;
  for (let i = 0; i < rows; i++) {
    const table = i % 3 === 0 ? 'quotes' : 'trades';
    const tags = { symbol: symbols[i % symbols.length], side: sides[(i >> 1) % 2] };
    const r = random();
    let price;
    switch (i % 5) {
      case 0: price = Math.round(r * 1e7) / 100; break;  // 2 decimals
      case 1: price = Math.floor(r * 100000); break;     // whole: sent as "123", no decimal point
      case 2: price = r * 1e21; break;                   // "1.234e+21"
      case 3: price = r * 1e-7; break;                   // "1.234e-7"
      default: price = -r * 1000; break;                 // full precision
    }
    const qty = Math.floor((random() - 0.5) * 2 ** 52);
    const flag = random() < 0.5;
    // Distinct times per row; not multiples of a microsecond, so nanoseconds must survive.
    const ts = base + BigInt(i) * 1000003n + BigInt(i % 7);
    await sender.table(table)
      .symbol('symbol', tags.symbol)
      .symbol('side', tags.side)
      .floatColumn('price', price)
      .intColumn('qty', qty)
      .booleanColumn('flag', flag)
      .stringColumn('note', `row ${i} "quoted" \\ text`)
      .at(ts, 'ns');
    record.add(table, tags, 'price', 'float', ts, price);
    record.add(table, tags, 'qty', 'integer', ts, qty);
    record.add(table, tags, 'flag', 'boolean', ts, flag ? 1 : 0);
  }
  await sender.flush();
  await sender.close();
  record.write();
}

main().catch((err) => {
  process.stderr.write(`questdb_writer: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
