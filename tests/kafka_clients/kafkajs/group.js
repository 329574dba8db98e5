#!/usr/bin/env node
// kafkajs's producer and consumer-group members, driven line by line for chunkraft's tests
// (tests/support/kafkajs_group.py runs it). Each stdin line is one JSON command; each is
// answered with exactly one JSON line on stdout, {"ok": true, "result": ...} or
// {"ok": false, "error": "..."}:
//   {"op": "connect", "brokers": [...], "sasl": {...}, "topic": "t", "group": "g",
//    "session_timeout_ms": 6000, "heartbeat_interval_ms": 500,
//    "read_uncommitted": false}                                     first, once
//   {"op": "produce", "records": [[key, value], ...]}   acks=all, idempotent, in order
//   {"op": "start", "member": "name"}                   a group member subscribes and runs
//   {"op": "stop", "member": "name"}                    that member disconnects (leaves)
//   {"op": "seen"}       every record the members saw since the last "seen":
//                        [[member, partition, offset, key, value], ...]
//   {"op": "quit"}       disconnects everything and exits
'use strict';

const readline = require('readline');
const { Kafka, logLevel, CompressionTypes } = require('kafkajs');

let kafka = null;
let settings = null;
let producer = null;
const members = new Map();
let seen = [];

async function connect(command) {
  settings = command;
  kafka = new Kafka({
    clientId: 'chunkraft-tests-group', brokers: command.brokers, sasl: command.sasl || undefined,
    logLevel: logLevel.ERROR, retry: { retries: 10, initialRetryTime: 200 },
    requestTimeout: 15000,
  });
  return true;
}

async function produce(command) {
  // Made on the first produce only: an idempotent producer's connect asks a broker of the
  // metadata for its producer id, which a reader (that never produces) must not wait for
  // while a broker is down.
  if (!producer) {
    producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
  }
  const messages = command.records.map(([key, value]) => ({ key, value }));
  for (let i = 0; i < messages.length; i += 500) {
    await producer.send({ topic: settings.topic, acks: -1, compression: CompressionTypes.None,
                          messages: messages.slice(i, i + 500) });
  }
  return messages.length;
}

async function start(command) {
  const consumer = kafka.consumer({
    groupId: settings.group, sessionTimeout: settings.session_timeout_ms || 6000,
    heartbeatInterval: settings.heartbeat_interval_ms || 500, rebalanceTimeout: 30000,
    // kafkajs heartbeats between fetches: a short long-poll lets a member hear of a
    // rebalance (and disconnect) within a heartbeat, not after its default 5 s wait.
    maxWaitTimeInMs: 250,
    readUncommitted: Boolean(settings.read_uncommitted),
  });
  await consumer.connect();
  await consumer.subscribe({ topic: settings.topic, fromBeginning: true });
  await consumer.run({
    autoCommitInterval: 500,
    eachMessage: async ({ partition, message }) => {
      seen.push([command.member, partition, Number(message.offset),
                 message.key ? message.key.toString() : null, message.value.toString()]);
    },
  });
  members.set(command.member, consumer);
  return true;
}

async function stop(command) {
  const consumer = members.get(command.member);
  if (!consumer) throw new Error(`no member ${command.member}`);
  members.delete(command.member);
  await consumer.disconnect();
  return true;
}

async function quit() {
  for (const consumer of members.values()) await consumer.disconnect();
  members.clear();
  if (producer) await producer.disconnect();
  return true;
}

const OPS = {
  connect, produce, start, stop, quit,
  seen: async () => { const out = seen; seen = []; return out; },
};

const lines = readline.createInterface({ input: process.stdin });
let queue = Promise.resolve();
lines.on('line', (line) => {
  queue = queue.then(async () => {
    let command;
    try {
      command = JSON.parse(line);
      const op = OPS[command.op];
      if (!op) throw new Error(`unknown op ${command.op}`);
      const result = await op(command);
      process.stdout.write(JSON.stringify({ ok: true, result }) + '\n');
    } catch (error) {
      process.stdout.write(JSON.stringify({ ok: false, error: String(error && error.stack || error) }) + '\n');
    }
    if (command && command.op === 'quit') process.exit(0);
  });
});
lines.on('close', () => { queue.then(quit).finally(() => process.exit(0)); });
