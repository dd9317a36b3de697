/**
 * The engine's own surface: template sets over several files, custom functions, methods on
 * class instances, missingkey modes, limits and error types. Expected values follow Go's rules as
 * established by the Go-checked table (go-oracle.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { goStringMap, parseTemplates, renderTemplate, TemplateError } from './index.js';

const throwsTemplateError = (fn: () => unknown, message: string | RegExp): void => {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof TemplateError, `TemplateError expected, got ${String(e)}`);
    if (typeof message === 'string') assert.equal(e.message, message);
    else assert.match(e.message, message);
    return true;
  });
};

describe('parseTemplates', () => {
  it('shares {{define}}s across files, later definitions win, empty ones do not replace', () => {
    const set = parseTemplates([
      { name: '_helpers.tpl', text: '{{ define "name" }}first{{ end }}{{ define "kept" }}K{{ end }}' },
      { name: 'a.yaml', text: 'a: {{ template "name" }} {{ include "kept" . }}' },
      { name: 'override.tpl', text: '{{ define "name" }}second{{ end }}{{ define "kept" }}   {{ end }}' },
    ]);
    assert.equal(set.execute('a.yaml', {}), 'a: second K');
    assert.ok(set.has('name') && set.has('a.yaml') && set.has('_helpers.tpl'));
    assert.ok(!set.has('nope'));
    throwsTemplateError(() => set.execute('nope', {}), 'template: no template "nope" associated with template "nope"');
  });

  it('keeps the enclosing variables in scope after a {{define}} and none of them inside it (Go parses a define as its own Tree)', () => {
    // Go 1.2x text/template: `{{$x := 1}}{{define "d"}}{{end}}{{$x}}` prints 1; `$x` inside "d" is
    // "undefined variable" (Istio's mutatingwebhook.yaml declares $whv before a define and uses it after).
    assert.equal(renderTemplate('{{ $x := 1 }}{{ define "d" }}D{{ end }}{{ $x }}{{ template "d" }}', {}), '1D');
    throwsTemplateError(
      () => renderTemplate('{{ $x := 1 }}{{ define "d" }}{{ $x }}{{ end }}', {}),
      'template: template:1: undefined variable "$x"',
    );
  });

  it('names the file and line of a parse error', () => {
    throwsTemplateError(
      () =>
        parseTemplates([
          { name: 'ok.tpl', text: 'fine' },
          { name: 'bad.yaml', text: 'x\ny\n{{ if .a }}\n' },
        ]),
      'template: bad.yaml:4: unexpected EOF',
    );
  });

  it('names the executing template and its position in execution errors', () => {
    const set = parseTemplates([
      { name: 'helpers.tpl', text: '{{ define "inner" }}\n  {{ required "value .x is required" .x }}{{ end }}' },
      { name: 'main.yaml', text: 'out: {{ include "inner" . }}' },
    ]);
    throwsTemplateError(
      () => set.execute('main.yaml', {}),
      'template: main.yaml:1:8: executing "main.yaml" at <include "inner" .>: error calling include: ' +
        'template: helpers.tpl:2:5: executing "inner" at <required "value .x is required" .x>: error calling required: value .x is required',
    );
    // What Helm prints as "execution error at (main.yaml:1:8): value .x is required".
    assert.throws(
      () => set.execute('main.yaml', {}),
      (e: unknown) => {
        assert.ok(e instanceof TemplateError);
        assert.equal(e.userMessage, 'value .x is required');
        assert.equal(e.location, 'main.yaml:1:8');
        return true;
      },
    );
    assert.throws(
      () => renderTemplate('{{ tpl "{{ fail \\"stop\\" }}" . }}', {}, { name: 'f' }),
      (e: unknown) => e instanceof TemplateError && e.userMessage === 'stop' && e.location === 'f:1:3',
    );
    assert.throws(
      () => renderTemplate('{{ upper 1 }}', {}, { name: 'f' }),
      (e: unknown) => e instanceof TemplateError && e.userMessage === undefined,
    );
  });
});

describe('custom functions', () => {
  it('override builtins and Sprig functions, receive Go-typed values and may return any value', () => {
    const seen: unknown[] = [];
    const out = renderTemplate(
      '{{ indent 2 "a\\nb" }}|{{ probe 3 1.5 "s" .f nil .missing }}|{{ pair "k" 1 | toJson }}',
      { f: 7 },
      {
        funcs: {
          indent: (n, s) =>
            String(s)
              .split('\n')
              .join('\n' + ' '.repeat(Number(n))),
          probe: (...args) => {
            seen.push(...args);
            return 'ok';
          },
          pair: (k, v) => ({ [String(k)]: v }),
        },
      },
    );
    assert.equal(out, 'a\n  b|ok|{"k":1}');
    assert.deepEqual(seen, [3n, 1.5, 's', 7, null, null]);
  });

  it('turn a thrown error into "error calling <name>"', () => {
    throwsTemplateError(
      () =>
        renderTemplate('{{ boom "x" }}', null, {
          name: 't',
          funcs: {
            boom: () => {
              throw new Error('it broke');
            },
          },
        }),
      'template: t:1:3: executing "t" at <boom "x">: error calling boom: it broke',
    );
  });

  it('must be valid identifiers', () => {
    throwsTemplateError(() => renderTemplate('x', null, { funcs: { 'not-ok': () => 1 } }), /function name "not-ok"/);
  });
});

describe('Go values', () => {
  it('keeps float64 (number) and int (bigint) apart as Go does', () => {
    assert.equal(
      renderTemplate('{{ .f }} {{ .i }} {{ printf "%d" .i }} {{ printf "%d" .f }}', { f: 1e6, i: 1000000n }),
      '1e+06 1000000 1000000 %!d(float64=1e+06)',
    );
    throwsTemplateError(
      () => renderTemplate('{{ eq .f 1 }}', { f: 1 }, { name: 't' }),
      /incompatible types for comparison: float64 and int/,
    );
    assert.equal(renderTemplate('{{ eq .i 1 }} {{ add .f 1 }}', { i: 1n, f: 1.9 }), 'true 2');
  });

  it('calls methods of class instances, with arguments and as a pipeline stage', () => {
    class Mode {
      constructor(private readonly name: string) {}
      String(): string {
        return this.name;
      }
    }
    class Proxy {
      readonly Mode = new Mode('TPROXY');
      readonly Port = 15001n;
      Greet(who: unknown, suffix: unknown): string {
        return `hi ${String(who)}${String(suffix)}`;
      }
      Fail(): never {
        throw new Error('no tracing');
      }
    }
    const data = { p: new Proxy() };
    assert.equal(
      renderTemplate('{{ .p.Mode }} {{ .p.Mode.String }} {{ .p.Greet "a" "!" }} {{ "?" | .p.Greet "b" }} {{ .p.Port }}', data),
      'TPROXY TPROXY hi a! hi b? 15001',
    );
    throwsTemplateError(
      () => renderTemplate('{{ .p.Fail }}', data, { name: 't' }),
      'template: t:1:5: executing "t" at <.p.Fail>: error calling Fail: no tracing',
    );
    throwsTemplateError(
      () => renderTemplate('{{ .p.Nope }}', data, { name: 't' }),
      'template: t:1:5: executing "t" at <.p.Nope>: can\'t evaluate field Nope in type interface {}',
    );
    // Plain objects are maps: Object.prototype members are not fields.
    assert.equal(renderTemplate('{{ .m.toString }}|{{ .m.constructor }}', { m: {} }), '<no value>|<no value>');
  });

  it('reads a missing key of a map[string]string as "" where Go yields the zero string', () => {
    const labels = goStringMap({ app: 'reviews' });
    assert.equal(
      renderTemplate('[{{ index .l "version" }}] [{{ index .m "version" }}] {{ typeOf .l }}', { l: labels, m: { app: 'reviews' } }),
      '[] [<no value>] map[string]string',
    );
    assert.equal(renderTemplate('[{{ .l.version }}]', { l: labels }, { missingKey: 'zero' }), '[]');
    throwsTemplateError(
      () => renderTemplate('{{ hasKey .l "app" }}', { l: labels }, { name: 't' }),
      /expected map\[string\]interface \{\}; got map\[string\]string/,
    );
  });
});

describe('keys named __proto__', () => {
  it('stay ordinary map entries in dict, set, merge and fromYaml/fromJson', () => {
    const out = renderTemplate(
      '{{ $d := dict "__proto__" "x" }}{{ $_ := set $d "k" 1 }}{{ $d }} {{ (fromYaml "__proto__: {a: 1}") }} {{ (fromJson "{\\"__proto__\\": 2}") }} {{ merge (dict) (fromYaml "__proto__: 3") }}',
      {},
    );
    assert.equal(out, 'map[__proto__:x k:1] map[__proto__:map[a:1]] map[__proto__:2] map[__proto__:3]');
    assert.equal(({} as Record<string, unknown>)['a'], undefined);
  });
});

describe('missingKey', () => {
  const data = { a: { b: 1 } };
  it("'default' prints <no value> and tolerates chains through missing keys", () => {
    assert.equal(renderTemplate('{{ .x }} {{ .x.y }} {{ .a.c }}', data), '<no value> <no value> <no value>');
  });
  it("'zero' (Helm) makes a missing key nil, so a chain through it is Helm's nil pointer error", () => {
    assert.equal(renderTemplate('{{ .x }}', data, { missingKey: 'zero' }), '<no value>');
    throwsTemplateError(
      () => renderTemplate('{{ .x.y }}', data, { missingKey: 'zero', name: 'chart' }),
      'template: chart:1:5: executing "chart" at <.x.y>: nil pointer evaluating interface {}.y',
    );
  });
  it("'error' fails on the first missing key", () => {
    throwsTemplateError(
      () => renderTemplate('{{ .a.c }}', data, { missingKey: 'error', name: 't' }),
      'template: t:1:5: executing "t" at <.a.c>: map has no entry for key "c"',
    );
  });
});

describe('limits', () => {
  it('stops runaway recursion with a depth error', () => {
    const text = '{{ define "loop" }}{{ template "loop" . }}{{ end }}{{ template "loop" . }}';
    throwsTemplateError(
      () => renderTemplate(text, {}, { name: 't', maxDepth: 50 }),
      /executing "loop" at <\{\{template "loop" \.\}\}>: exceeded maximum template depth \(50\)/,
    );
    // Reported once, not wrapped by each of the 1000 include levels.
    throwsTemplateError(
      () => renderTemplate('{{ define "r" }}{{ include "r" . }}{{ end }}{{ include "r" . }}', {}, { name: 't' }),
      'template: t:1:19: executing "r" at <include "r" .>: exceeded maximum template depth (200)',
    );
  });

  it('stops output beyond the cap', () => {
    throwsTemplateError(
      () => renderTemplate('{{ range until 100000 }}0123456789{{ end }}', {}, { name: 't', maxOutputLength: 1000 }),
      /template: t:1:24: executing "t" at <0123456789>: output exceeds the limit of 1000 characters/,
    );
    assert.equal(renderTemplate('{{ range until 100 }}0123456789{{ end }}', {}, { maxOutputLength: 1000 }).length, 1000);
  });
});

describe('Helm functions', () => {
  it('fromYaml reports a YAML syntax error under "Error" with its line (the wording is the yaml library\'s)', () => {
    assert.match(renderTemplate('{{ (fromYaml .y).Error }}', { y: 'a: [1, 2\n' }), /^error converting YAML to JSON: yaml: line 2: \S/);
    assert.match(
      renderTemplate('{{ index (fromYamlArray .y) 0 }}', { y: 'a:\n\tb: 1\n' }),
      /^error converting YAML to JSON: yaml: line 2: \S/,
    );
  });

  it('tpl reports the text that failed and drops <no value> as Helm does', () => {
    assert.equal(renderTemplate('[{{ tpl "{{ .missing }}" . }}]', {}), '[]');
    throwsTemplateError(
      () => renderTemplate('{{ tpl "{{ .a.b.c }}" . }}', { a: 1 }, { name: 't' }),
      'template: t:1:3: executing "t" at <tpl "{{ .a.b.c }}" .>: error calling tpl: error during tpl function execution for "{{ .a.b.c }}": ' +
        'template: gotpl:1:5: executing "gotpl" at <.a.b.c>: can\'t evaluate field b in type interface {}',
    );
    throwsTemplateError(
      () => renderTemplate('{{ tpl "{{ if }}" . }}', {}, { name: 't' }),
      'template: t:1:3: executing "t" at <tpl "{{ if }}" .>: error calling tpl: cannot parse template "{{ if }}": template: gotpl:1: missing value for if',
    );
  });

  it('tpl renders a string against the set, include output pipes into nindent', () => {
    const set = parseTemplates([
      { name: '_helpers.tpl', text: '{{- define "labels" -}}\napp: {{ .name }}\nrelease: {{ .rel | quote }}\n{{- end -}}' },
      { name: 'deploy.yaml', text: 'metadata:\n  labels:\n    {{- include "labels" . | nindent 4 }}\n  note: {{ tpl .note . }}' },
    ]);
    assert.equal(
      set.execute('deploy.yaml', { name: 'web', rel: 1, note: '{{ .name }}-{{ include "labels" . | len }}' }),
      'metadata:\n  labels:\n    app: web\n    release: "1"\n  note: web-21',
    );
  });
});
