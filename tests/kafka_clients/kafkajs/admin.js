#!/usr/bin/env node
// kafkajs's admin client, driven by one JSON command (argv[2], else stdin), for chunkraft's
// end-to-end tests (tests/support/kafkajs.py runs it). Prints exactly one JSON line on stdout:
//   {"ok": true, "result": ...}
//   {"ok": false, "error": {"type", "name", "message", "code", "retriable", "cause", "errors"}}
// The command:
//   {"brokers": ["host:port", ...],
//    "sasl": {"mechanism": "plain", "username": ..., "password": ...} | null,
//    "op": "listTopics" | "createTopics" | "createPartitions" | "deleteTopics" |
//          "describeCluster" | "describeConfigs" | "alterConfigs" | "createAcls" |
//          "describeAcls" | "deleteAcls",
//    "args": {...},            // kafkajs's own argument of that call, as its docs give it
//    "timeout_ms": 10000, "retries": 0, "client_id": "chunkraft-tests"}   // optional
// In args, enum fields (type, resourceType, operation, permissionType, resourcePatternType)
// may be given by name ("TOPIC", "ALLOW", ...) as well as by kafkajs's number.
// Exit status 0 whenever a result line was printed (ok or not), 2 for a command it cannot run.
'use strict';

const {
  Kafka, logLevel, ConfigResourceTypes, AclResourceTypes, AclOperationTypes,
  AclPermissionTypes, ResourcePatternTypes,
} = require('kafkajs');

const OPS = {
  listTopics: (admin) => admin.listTopics(),
  createTopics: (admin, args) => admin.createTopics(args),
  createPartitions: (admin, args) => admin.createPartitions(args),
  deleteTopics: (admin, args) => admin.deleteTopics(args),
  describeCluster: (admin) => admin.describeCluster(),
  describeConfigs: (admin, args) => admin.describeConfigs(
    withEnums(args, { type: ConfigResourceTypes })),
  alterConfigs: (admin, args) => admin.alterConfigs(
    withEnums(args, { type: ConfigResourceTypes })),
  createAcls: (admin, args) => admin.createAcls(withEnums(args, ACL_ENUMS)),
  describeAcls: (admin, args) => admin.describeAcls(withEnums(args, ACL_ENUMS)),
  deleteAcls: (admin, args) => admin.deleteAcls(withEnums(args, ACL_ENUMS)),
};

const ACL_ENUMS = {
  resourceType: AclResourceTypes,
  operation: AclOperationTypes,
  permissionType: AclPermissionTypes,
  resourcePatternType: ResourcePatternTypes,
};

// A copy of value where each field named in enums, given as a name, is that enum's number.
function withEnums(value, enums) {
  if (Array.isArray(value)) return value.map((item) => withEnums(item, enums));
  if (value === null || typeof value !== 'object') return value;
  const out = {};
  for (const [key, item] of Object.entries(value)) {
    if (key in enums && typeof item === 'string') {
      if (!(item in enums[key])) throw badCommand(`unknown ${key} ${item}`);
      out[key] = enums[key][item];
    } else {
      out[key] = withEnums(item, enums);
    }
  }
  return out;
}

function badCommand(message) {
  const error = new Error(message);
  error.name = 'BadCommand';
  error.type = 'BAD_COMMAND';
  return error;
}

// The error as JSON: kafkajs's own fields (type and code for a Kafka error code), its cause
// (a retrying wrapper's) and, for an aggregate, each error it holds.
function describeError(error, depth = 0) {
  if (error === null || error === undefined) return null;
  const out = {
    type: error.type ?? null,
    name: error.name ?? null,
    message: error.message ?? String(error),
    code: error.code ?? null,
    retriable: error.retriable ?? null,
  };
  if (error.topic !== undefined) out.topic = error.topic;
  if (depth < 3) {
    out.cause = describeError(error.cause, depth + 1);
    if (Array.isArray(error.errors)) {
      out.errors = error.errors.map((inner) => describeError(inner, depth + 1));
    }
  }
  return out;
}

function readCommand() {
  if (process.argv.length > 2) return Promise.resolve(process.argv[2]);
  return new Promise((resolve, reject) => {
    const chunks = [];
    process.stdin.on('data', (chunk) => chunks.push(chunk));
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    process.stdin.on('error', reject);
  });
}

function print(line) {
  return new Promise((resolve) => process.stdout.write(`${JSON.stringify(line)}\n`, resolve));
}

function kafkaLogger() {
  // kafkajs logs to stdout by default: its lines go to stderr, so stdout holds only the result.
  return ({ level, log }) => {
    const { message, ...extra } = log;
    process.stderr.write(`kafkajs ${level}: ${message} ${JSON.stringify(extra)}\n`);
  };
}

async function run(command) {
  const op = OPS[command.op];
  if (op === undefined) throw badCommand(`unknown op ${command.op}`);
  if (!Array.isArray(command.brokers) || command.brokers.length === 0) {
    throw badCommand('brokers must be a non-empty list');
  }
  const timeoutMs = command.timeout_ms ?? 10000;
  const kafka = new Kafka({
    clientId: command.client_id ?? 'chunkraft-tests',
    brokers: command.brokers,
    sasl: command.sasl ?? undefined,
    ssl: false,
    connectionTimeout: Math.min(timeoutMs, 5000),
    requestTimeout: timeoutMs,
    retry: { retries: command.retries ?? 0 },
    logLevel: logLevel.ERROR,
    logCreator: kafkaLogger,
  });
  const admin = kafka.admin();
  await admin.connect();
  try {
    const result = await op(admin, command.args ?? {});
    return result === undefined ? null : result;
  } finally {
    await admin.disconnect();
  }
}

async function main() {
  let command;
  try {
    command = JSON.parse(await readCommand());
  } catch (error) {
    await print({ ok: false, error: describeError(badCommand(`not JSON: ${error.message}`)) });
    return 2;
  }
  // A bound of our own, past kafkajs's: the tests never wait on a hung client.
  const deadline = setTimeout(() => {
    process.stdout.write(`${JSON.stringify({ ok: false, error: describeError(
      Object.assign(new Error('the kafkajs driver ran out of time'),
        { name: 'DriverTimeout', type: 'DRIVER_TIMEOUT' })) })}\n`, () => process.exit(0));
  }, (command.timeout_ms ?? 10000) * 3);
  deadline.unref();
  try {
    await print({ ok: true, result: await run(command) });
    return 0;
  } catch (error) {
    await print({ ok: false, error: describeError(error) });
    return error.type === 'BAD_COMMAND' ? 2 : 0;
  }
}

main().then((status) => process.exit(status));
