import type { parse } from '@bufbuild/cel';

/** A parsed CEL expression (the library's syntax tree). */
export type Expr = NonNullable<ReturnType<typeof parse>['expr']>;

export function identName(e: Expr | undefined): string {
  return e?.exprKind.case === 'identExpr' ? e.exprKind.value.name : '';
}

export function children(e: Expr): Array<Expr | undefined> {
  const k = e.exprKind;
  switch (k.case) {
    case 'selectExpr':
      return [k.value.operand];
    case 'callExpr':
      return [k.value.target, ...k.value.args];
    case 'listExpr':
      return k.value.elements;
    case 'structExpr':
      return k.value.entries.flatMap((entry) => [entry.keyKind.case === 'mapKey' ? entry.keyKind.value : undefined, entry.value]);
    default:
      return [];
  }
}

