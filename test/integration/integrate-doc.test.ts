import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { projectRoot } from '../../config/config';
import { childEnv } from '../../config/child-env';
import { IntentClient } from '@intent-service/client';
import { docSnippets } from '../support/doc-snippets';
import { getExecution, newWallet, prepare, sampleIntent, signedBody, submit } from '../support/executions';
import { getStack, type Stack } from '../support/stack';

const run = promisify(execFile);
const blocks = (lang: string) => docSnippets('integrate.md', lang);

describe('docs/integrate.md: every snippet runs as written', function () {
  this.timeout(120_000);
  let stack: Stack;
  before(async () => {
    stack = await getStack();
  });

  it('when its TypeScript snippets are compiled (the browser one with the DOM types), then the compiler finds no error', () => {
    const snippets = blocks('ts');
    assert.equal(snippets.length, 4, 'a wallet frontend (SDK), a chain watcher (SDK and @temporalio/client) and a webhook receiver');
    // Under the project, so that the snippets resolve the packages they import as a reader's project would.
    const dir = path.join(projectRoot, 'dist', 'doc-snippets');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const files = snippets.map((text, i) => {
      const file = path.join(dir, `snippet-${i + 1}.ts`);
      writeFileSync(file, text);
      return file;
    });
    const program = ts.createProgram(files, {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
      types: ['node'],
      strict: true,
      esModuleInterop: true,
      skipLibCheck: true,
    });
    program.emit(); // the SDK snippets run in the next test
    const problems = ts
      .getPreEmitDiagnostics(program)
      .map((d) => `${d.file ? path.basename(d.file.fileName) : ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    assert.deepEqual(problems, []);
  });

  it('when the SDK snippets run (the frontend submits and follows, the watcher reports the deposit), then the frontend sees PREPARED first and SIGNING last', async () => {
    const dir = path.join(projectRoot, 'dist', 'doc-snippets');
    const frontend = require(path.join(dir, 'snippet-1.js')) as {
      submitAndFollow(
        api: IntentClient,
        key: Uint8Array,
        wallet: string,
        id: string,
        intent: unknown,
        on: (s: string) => void,
      ): Promise<string>;
    };
    const watcher = require(path.join(dir, 'snippet-2.js')) as {
      reportDepositHttp(
        api: IntentClient,
        wallet: string,
        id: string,
        deposit: { txHash: string; chain: string; amount: string },
      ): Promise<string>;
    };
    const wallet = newWallet();
    const executionId = `integrate-sdk-${Date.now()}`;
    const intent = sampleIntent();
    assert.equal((await prepare(stack, wallet, { executionId, intent })).status, 201);
    const api = new IntentClient({ baseUrl: stack.api.url, token: stack.tokens.deposit });
    const seen: string[] = [];
    const submitted = await frontend.submitAndFollow(api, wallet.secretKey, wallet.id, executionId, intent, (status) => {
      seen.push(status);
      if (seen.length === 1)
        void watcher.reportDepositHttp(api, wallet.id, executionId, { txHash: '0xsdk1', chain: 'evm:31337', amount: '1' });
    });
    assert.equal(submitted, 'PREPARED', 'signed before the deposit');
    assert.deepEqual([seen[0], seen.at(-1)], ['PREPARED', 'SIGNING'], seen.join());
  });

  it('when the page is read, then every shell snippet is in a section whose test runs it (a chain watcher here, on-chain deposits on anvil)', () => {
    const run = docSnippets('integrate.md', 'sh', 'A chain watcher').length + docSnippets('integrate.md', 'sh', 'On-chain deposits').length;
    assert.equal(blocks('sh').length, run);
  });

  it('when its chain watcher shell snippets run in order against a running service, then each prints what the page says', async () => {
    const snippets = docSnippets('integrate.md', 'sh', 'A chain watcher');
    assert.equal(snippets.length, 3);
    const wallet = newWallet();
    const executionId = `integrate-${Date.now()}`;
    const intent = sampleIntent();
    assert.equal((await prepare(stack, wallet, { executionId, intent })).status, 201);
    const env = childEnv({
      API: stack.api.url,
      TOKEN: stack.tokens.deposit,
      WALLET: wallet.id,
      EXECUTION: executionId,
      TEMPORAL_ADDRESS: stack.temporal.address,
    });
    env.PATH = `${path.dirname(stack.temporalBinary)}:${env.PATH ?? ''}`; // the pinned `temporal` CLI
    const sh = async (script: string) => (await run('bash', ['-euo', 'pipefail', '-c', script], { env })).stdout;

    // HTTP: the deposit, then another txHash refused and recorded.
    const http = (await sh(snippets[0])).trim().split('\n');
    assert.equal(http[0], '200');
    assert.match(http[1], /"error":"execution already has a deposit with another txHash/);
    assert.equal(http[2], '409');
    // The CLI signal of the same txHash: accepted, and changes nothing.
    await sh(snippets[1]);
    // The operator's view: the refused deposit in the record, the execution in the list.
    const view = await sh(snippets[2]);
    assert.match(view, /"refusedDeposits":\[\{[^\]]*"txHash":"0xdeposit2"/);
    assert.match(view, new RegExp(`exec:${wallet.id}:${executionId}`));

    const record = (await getExecution(stack, wallet.id, executionId)).body.result;
    assert.equal(record.status, 'OPERATION_PENDING');
    assert.equal(record.deposit.txHash, '0xdeposit1');
    assert.equal(record.refusedDeposits.length, 1, 'the refused deposit is recorded once');
    // And the frontend's submit then signs it off.
    const answer = await submit(stack, wallet.id, signedBody(wallet, executionId, intent));
    assert.equal(answer.body.result.status, 'SIGNING');
  });
});
