import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildOpenApiDocument } from '../../api/operations/openapi';
import { loadConfig, projectRoot } from '../../config/config';
import { testSettings } from '../support/settings';

const SNAPSHOT = path.join(projectRoot, 'test', 'fixtures', 'openapi.json');

// The OpenAPI document is part of the interface: a change to it is a change clients see. It is
// compared byte for byte with the committed snapshot; a deliberate change rewrites the snapshot
// (`OPENAPI_SNAPSHOT=write`) and shows up in review as a diff of test/fixtures/openapi.json.
describe('unit: the OpenAPI document (api/operations/openapi.ts) is the committed one', () => {
  it('when the document is built with the default configuration, then it is byte for byte test/fixtures/openapi.json', () => {
    const text = `${JSON.stringify(buildOpenApiDocument(loadConfig({})), null, 2)}\n`;
    if (testSettings().OPENAPI_SNAPSHOT === 'write') writeFileSync(SNAPSHOT, text);
    assert.equal(text, readFileSync(SNAPSHOT, 'utf8'), 'the OpenAPI document changed: if that is meant, run with OPENAPI_SNAPSHOT=write');
  });
});
