// What both MCP tests need: a scratch root with a model, a build folder and two metrics
// databases, made fresh per run. The databases are built with the sqlite3 CLI from the
// schema the runtime writes (runtime/src/MetricsWriter.cpp), so a schema change shows here.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const env = {
  server: process.env.MPNANNY_MCP,
  sourceDir: process.env.MPNANNY_SOURCE_DIR,
  mock: process.env.MPNANNY_TORCH_MOCK,
  sqlite3: process.env.MPNANNY_SQLITE3 || 'sqlite3',
};
for (const [key, value] of Object.entries(env)) {
  if (!value) throw new Error(`set ${key} (MPNANNY_MCP, MPNANNY_SOURCE_DIR, MPNANNY_TORCH_MOCK)`);
}

export const flags = ['-std=c++17', '-isystem', env.mock];
export const modelText = fs.readFileSync(path.join(env.sourceDir, 'test/mcp/Inputs/model.cpp'), 'utf8');
/** 1-based line of the log(softmax) in Inputs/model.cpp. */
export const logSoftmaxLine = modelText.split('\n').findIndex((l) => l.includes('torch::log(torch::softmax')) + 1;

export function schemaSql() {
  const writer = fs.readFileSync(path.join(env.sourceDir, 'runtime/src/MetricsWriter.cpp'), 'utf8');
  const match = writer.match(/R"sql\(([\s\S]*?)\)sql"/);
  if (!match) throw new Error('no schema in runtime/src/MetricsWriter.cpp');
  return match[1];
}

function sqlite(file, sql) {
  execFileSync(env.sqlite3, [file], { input: sql });
}

/**
 * Three alerts (one ERROR), twenty steps, a loss scale; `verdicts` adds site_verdicts,
 * `manyAlerts` that many more WARNINGs with 400-character messages (more than one response holds).
 */
function makeDatabase(file, { verdicts, manyAlerts = 0 }) {
  let sql = schemaSql() + `
INSERT INTO meta VALUES ('schema_version', '1'), ('writer', 'mpnanny-runtime');
INSERT INTO runs(run_id, started_at, ended_at, pid, precision, torch_version)
  VALUES (1, '2026-01-01T00:00:00Z', '2026-01-01T00:10:00Z', 42, 'FP16', '1.13.1');
INSERT INTO locations VALUES (1, 1, 'head', '/src/model.cpp', 7);
`;
  for (let step = 0; step < 20; ++step) {
    sql += `INSERT INTO steps VALUES (1, ${step}, ${step % 5 === 0 ? 1 : 0}, 0, 12.5, ${step === 12 ? 2 : step === 3 ? 1 : 0});\n`;
    sql += `INSERT INTO loss_scale VALUES (1, ${step}, ${step < 12 ? 65536 : 32768}, ${step === 12 ? 1 : 0});\n`;
  }
  sql += `
INSERT INTO alerts(run_id, step, seq, type, severity, rule, phase, op, name, location_id, function, file, line, value, threshold, message)
  VALUES (1, 3, 4, 'OVERFLOW_RISK', 'WARNING', 'adaptive', 'forward', 'aten::exp', '', 1, 'head', '/src/model.cpp', 7, 30000, 16384, 'max |x| 30000 is within 2x of the fp16 max'),
         (1, 12, 4, 'OVERFLOW', 'ERROR', 'fixed', 'forward', 'aten::softmax', '', 1, 'head', '/src/model.cpp', 7, 70000, 65504, 'values above the fp16 max'),
         (1, 12, 9, 'LOSS_SCALE_DROP', 'WARNING', 'fixed', 'backward', '', '', 0, '', '', 0, 32768, 65536, 'loss scale halved');
`;
  if (manyAlerts) {
    sql += `
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${manyAlerts})
INSERT INTO alerts(run_id, step, seq, type, severity, rule, phase, op, name, location_id, function, file, line, value, threshold, message)
  SELECT 1, 13 + i % 7, 100 + i, 'UNDERFLOW', 'WARNING', 'fixed', 'forward', 'aten::exp', '', 1, 'head', '/src/model.cpp', 7,
         0.5, 0.1, printf('%.400c', 'u') FROM n;
`;
  }
  if (verdicts) {
    sql += `
CREATE TABLE site_verdicts(run_id INTEGER, site_id TEXT, check_name TEXT, file TEXT, line INTEGER, function TEXT,
  verdict TEXT, evidence TEXT, steps_observed INTEGER, worst_headroom REAL, first_step INTEGER, value REAL);
INSERT INTO site_verdicts VALUES (1, 'abc123', 'mpnanny-log-softmax', '/src/model.cpp', 7, 'head', 'CONFIRMED',
  'aten::softmax output underflowed to 0 at step 12', 20, 0.5, 12, 0);
INSERT INTO site_verdicts VALUES (1, 'def456', 'mpnanny-risky-op', '/src/model.cpp', 9, 'head', 'NOT_OBSERVED',
  '', 20, 300, NULL, NULL);
`;
  }
  sqlite(file, sql);
}

/**
 * root/
 *   model.cpp            Inputs/model.cpp
 *   build/compile_commands.json  lists model.cpp and third_party/dep.cpp (skipped)
 *   runs/metrics.db      no site_verdicts table
 *   verified/metrics.db  with site_verdicts
 *   many/metrics.db      6003 alerts, about 2.6 MB of them
 * outside/               a sibling the server must not read
 */
export function makeFixture() {
  const top = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'mpnanny-mcp-')));
  const root = path.join(top, 'root');
  const outside = path.join(top, 'outside');
  for (const dir of [root, outside, path.join(root, 'build'), path.join(root, 'runs'), path.join(root, 'verified'),
                     path.join(root, 'many'), path.join(root, 'third_party')]) {
    fs.mkdirSync(dir, { recursive: true });
  }
  fs.writeFileSync(path.join(root, 'model.cpp'), modelText);
  fs.writeFileSync(path.join(root, 'third_party', 'dep.cpp'), modelText);
  const command = (file) => ({
    directory: path.join(root, 'build'),
    file,
    arguments: ['/usr/bin/c++', ...flags, '-o', 'x.o', '-c', file],
  });
  fs.writeFileSync(path.join(root, 'build', 'compile_commands.json'),
                   JSON.stringify([command(path.join(root, 'model.cpp')),
                                   command(path.join(root, 'third_party', 'dep.cpp'))], null, 2));
  makeDatabase(path.join(root, 'runs', 'metrics.db'), { verdicts: false });
  makeDatabase(path.join(root, 'verified', 'metrics.db'), { verdicts: true });
  makeDatabase(path.join(root, 'many', 'metrics.db'), { verdicts: false, manyAlerts: 6000 });
  fs.writeFileSync(path.join(outside, 'secret.cpp'), 'int secret = 42; // SECRET-MARKER\n');
  makeDatabase(path.join(outside, 'metrics.db'), { verdicts: true });
  return { top, root, outside, cleanup: () => fs.rmSync(top, { recursive: true, force: true }) };
}

/** Every file under dir with its size and mtime: the server must leave it as it was. */
export function snapshot(dir) {
  const out = {};
  const walk = (d) => {
    for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, entry.name);
      if (entry.isDirectory()) walk(p);
      else {
        const st = fs.lstatSync(p);
        out[path.relative(dir, p)] = `${st.size}:${st.mtimeMs}`;
      }
    }
  };
  walk(dir);
  return out;
}

export function serverArgs(fixture) {
  return ['--root', fixture.root, '--include-dir', env.mock, '-j', '1'];
}
