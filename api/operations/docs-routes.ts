import type Router from '@koa/router';

/** `GET /openapi.json`: the OpenAPI 3.1 document of this API (built once per app). */
export function docsRoutes(router: Router, document: object): void {
  const body = JSON.stringify(document);
  router.get('/openapi.json', (ctx) => {
    ctx.type = 'application/json';
    ctx.body = body;
  });
}
