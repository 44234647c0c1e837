import ts from 'typescript';

/** One module a TypeScript source imports, and whether the build erases the import (type-only). */
export interface ImportedModule {
  specifier: string;
  typeOnly: boolean;
}

/**
 * Every module `source` imports, read from its syntax tree, so that comments and strings never
 * count: import and export-from declarations, `import x = require(…)`, and `require(…)`,
 * `require.resolve(…)` and `import(…)` calls with a literal specifier. An import whose every
 * binding is `type` is type-only; `import 'x'` (a side effect) is not.
 */
export function importedModules(source: string): ImportedModule[] {
  const file = ts.createSourceFile('source.ts', source, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found: ImportedModule[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier))
      found.push({ specifier: node.moduleSpecifier.text, typeOnly: typeOnlyClause(node.importClause) });
    else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier))
      found.push({ specifier: node.moduleSpecifier.text, typeOnly: node.isTypeOnly });
    else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      ts.isStringLiteral(node.moduleReference.expression)
    )
      found.push({ specifier: node.moduleReference.expression.text, typeOnly: node.isTypeOnly });
    else if (ts.isCallExpression(node) && isModuleCall(node.expression) && node.arguments[0] && ts.isStringLiteralLike(node.arguments[0]))
      found.push({ specifier: node.arguments[0].text, typeOnly: false });
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

function typeOnlyClause(clause: ts.ImportClause | undefined): boolean {
  if (clause === undefined) return false;
  if (clause.isTypeOnly) return true;
  if (clause.name !== undefined) return false;
  const named = clause.namedBindings;
  return named !== undefined && ts.isNamedImports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly);
}

function isModuleCall(callee: ts.Expression): boolean {
  if (callee.kind === ts.SyntaxKind.ImportKeyword) return true;
  if (ts.isIdentifier(callee)) return callee.text === 'require';
  return (
    ts.isPropertyAccessExpression(callee) &&
    ts.isIdentifier(callee.expression) &&
    callee.expression.text === 'require' &&
    callee.name.text === 'resolve'
  );
}
