'use strict';
// Writes `rows` points over HTTP /write to 127.0.0.1:<port> with the `influx` package (InfluxDB
// 1.x client): a schema with float, integer, boolean and string fields, tags that need escaping,
// batches in nanosecond, millisecond and second precision, after a /ping. Prints what it sent
// (see common.js).
//
// usage: node influx_writer.js <port> <rows>     (NODE_PATH must hold the installed modules)
// INGOT_INFLUX_USERNAME and INGOT_INFLUX_PASSWORD, when set, are the client's credentials (it
// sends them as the u and p URL parameters).
const Influx = require('influx');
const { makeRandom, makeRecorder, parseArgs } = require('./common');

async function main() {
  const { port, rows } = parseArgs('node influx_writer.js <port> <rows>');
  const random = makeRandom(7);
  const record = makeRecorder();
  const influx = new Influx.InfluxDB({
    host: '127.0.0.1',
    port,
    protocol: 'http',
    database: 'ingot',
    ...(process.env.INGOT_INFLUX_USERNAME === undefined ? {} : {
      username: process.env.INGOT_INFLUX_USERNAME,
      password: process.env.INGOT_INFLUX_PASSWORD,
    }),
    schema: [{
      measurement: 'sensors',
      fields: {
        temp: Influx.FieldType.FLOAT,
        count: Influx.FieldType.INTEGER,
        ok: Influx.FieldType.BOOLEAN,
        label: Influx.FieldType.STRING,
      },
      tags: ['room', 'floor'],
    }],
  });
  const hosts = await influx.ping(5000);
  if (!hosts.every((h) => h.online)) throw new Error('ping: node not online');

  const rooms = ['lab', 'room 1', 'a,b', 'k=v'];
  const precisions = [
    { precision: 'n', ns: 1n },
    { precision: 'ms', ns: 1000000n },
    { precision: 's', ns: 1000000000n },
  ];
  const batch = 250;
  for (let start = 0, b = 0; start < rows; start += batch, b++) {
    const { precision, ns } = precisions[b % precisions.length];
    const points = [];
    for (let i = start; i < Math.min(rows, start + batch); i++) {
      const tags = { room: rooms[i % rooms.length], floor: String(i % 3) };
      // One second apart, increasing across batches, sent in the batch's unit.
      const tsNs = 1700000000000000000n + BigInt(i) * 1000000000n;
      const units = tsNs / ns;
      const r = random();
      const temp = i % 4 === 0 ? Math.floor(r * 100) : Math.round(r * 10000) / 100 - 20;
      const count = Math.floor((random() - 0.5) * 2 ** 40);
      const ok = random() < 0.5;
      points.push({
        measurement: 'sensors',
        tags,
        fields: { temp, count, ok, label: `p${i}` },
        timestamp: units.toString(),
      });
      record.add('sensors', tags, 'temp', 'float', tsNs, temp);
      record.add('sensors', tags, 'count', 'integer', tsNs, count);
      record.add('sensors', tags, 'ok', 'boolean', tsNs, ok ? 1 : 0);
    }
    await influx.writePoints(points, { precision });
  }
  record.write();
}

main().catch((err) => {
  process.stderr.write(`influx_writer: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
