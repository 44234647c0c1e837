import { Ajv2020 } from 'ajv/dist/2020';

type Doc = {
  paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>>;
  components: object;
};

/**
 * Checks real answers against an OpenAPI 3.1 document: the JSON schema the document gives for
 * (path template, method, status) must accept the body. Refs resolve inside the document.
 */
export function answerChecker(doc: Doc) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addFormat('date-time', (s: string) => /^\d{4}-\d\d-\d\dT/.test(s) && !Number.isNaN(Date.parse(s)));
  return (pathTemplate: string, method: string, status: number, body: unknown): void => {
    const response = doc.paths[pathTemplate]?.[method.toLowerCase()]?.responses[String(status)];
    if (!response) throw new Error(`the document has no ${status} for ${method} ${pathTemplate}`);
    const schema = response.content?.['application/json']?.schema;
    if (!schema) throw new Error(`the document has no JSON body for ${status} of ${method} ${pathTemplate}`);
    const validate = ajv.compile({ ...schema, components: doc.components });
    if (!validate(body))
      throw new Error(
        `${status} of ${method} ${pathTemplate} does not match the document: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body)}`,
      );
  };
}

/** `/api/v1/executions/:wallet` (koa-router) → `/api/v1/executions/{wallet}` (OpenAPI). */
export const openApiPath = (routerPath: string) => routerPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
