# SPDX-License-Identifier: LGPL-2.1-or-later
"""Varlink IDL parser and JSON validator for the integration tests.

The same grammar and the same validation rules as proto/idl.c, in standard
library Python only, so a test can check that every reply the daemon sends
matches proto/io.toolsd.varlink (and org.varlink.service errors their own
definition):

    import varlink_idl
    varlink_idl.validate('io.toolsd.Status', reply['parameters'], 'out')
    varlink_idl.validate_error(reply['error'], reply.get('parameters'))

A mismatch raises ValueError naming the dotted path of the member
("skill.limits.timeout_ms", "tools[2].name"); an unknown method or error
raises KeyError. Rules: every member known; non-optional members present and
not null (null for an optional member is the same as absent); int is a JSON
integer (2.0 is not); float is any finite number; object is any JSON object;
an enum only its listed strings; nesting at most 64 levels.
"""

import math
import os
import re

DEPTH_MAX = 64
PARSE_DEPTH_MAX = 64
TEXT_MAX = 1024 * 1024

_PROTO = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'proto')
DEFAULT_FILES = ('io.toolsd.varlink', 'org.varlink.service.varlink')

_FIELD_RE = re.compile(r'[A-Za-z](?:_?[A-Za-z0-9])*')
_TYPE_NAME_RE = re.compile(r'[A-Z][A-Za-z0-9]*')
_WORD_RE = re.compile(r'[A-Za-z0-9_]*')
_IFACE_RUN_RE = re.compile(r'[A-Za-z0-9.-]*')
_IFACE_RE = re.compile(r'[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?'
                       r'(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+')
_BUILTINS = ('bool', 'int', 'float', 'string', 'object')


class ParseError(ValueError):
    """A syntax error: the message starts with "line N: "."""


# Types are tuples: ('bool',), ('int',), ('float',), ('string',), ('object',),
# ('named', Name), ('struct', [(field, type)]), ('enum', [values]),
# ('array', T), ('map', T), ('optional', T).

class _Parser:
    def __init__(self, text):
        self.s = text
        self.i = 0
        self.line = 1

    def fail(self, what):
        raise ParseError('line %d: %s' % (self.line, what))

    def peek(self, n=1):
        return self.s[self.i:self.i + n]

    def skip_space(self):
        start = self.i
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c == '\n':
                self.line += 1
                self.i += 1
            elif c in ' \t\r':
                self.i += 1
            elif c == '#':
                while self.i < len(s) and s[self.i] != '\n':
                    self.i += 1
            else:
                break
        return self.i != start

    def word(self):
        return _WORD_RE.match(self.s, self.i).group(0)

    def interface(self):
        self.skip_space()
        if self.word() != 'interface':
            self.fail('expected "interface"')
        self.i += len('interface')
        if not self.skip_space():
            self.fail('expected a blank after "interface"')
        name = _IFACE_RUN_RE.match(self.s, self.i).group(0)
        if not _IFACE_RE.fullmatch(name):
            self.fail('expected an interface name (e.g. org.example.service)')
        self.i += len(name)
        return name

    def member(self, members):
        kw = self.word()
        if kw not in ('type', 'method', 'error'):
            self.fail('expected "type", "method" or "error"')
        self.i += len(kw)
        if not self.skip_space():
            self.fail('expected a blank after "%s"' % kw)
        name = self.word()
        if not _TYPE_NAME_RE.fullmatch(name):
            self.fail('expected a name after "%s" (a capital letter, then letters and digits)' % kw)
        if name in members:
            self.fail("duplicate member '%s'" % name[:64])
        self.i += len(name)
        line = self.line
        if kw == 'type':
            self.skip_space()
            if self.peek() != '(':
                self.fail('expected "("')
            members[name] = ('type', self.struct_or_enum(0), None, line)
        elif kw == 'error':
            members[name] = ('error', self.struct(), None, line)
        else:
            members[name] = ('method', None, None, line)
            inp = self.struct()
            self.skip_space()
            if self.peek(2) != '->':
                self.fail('expected "->"')
            self.i += 2
            members[name] = ('method', inp, self.struct(), line)

    def struct(self):
        self.skip_space()
        if self.peek() != '(':
            self.fail('expected "("')
        t = self.struct_or_enum(0)
        if t[0] != 'struct':
            self.fail('expected a struct, not an enum')
        return t

    def field_name(self):
        self.skip_space()
        w = self.word()
        if not w or not _FIELD_RE.fullmatch(w):
            self.fail('expected a field name')
        self.i += len(w)
        return w

    def struct_or_enum(self, depth):
        self.i += 1
        self.skip_space()
        if self.peek() == ')':
            self.i += 1
            return ('struct', [])
        kind = 'struct'
        items = []
        names = set()
        first = True
        while True:
            name = self.field_name()
            self.skip_space()
            if first and self.peek() in (',', ')'):
                kind = 'enum'
            first = False
            if name in names:
                self.fail("duplicate %s '%s'" % ('field' if kind == 'struct' else 'enum value',
                                                 name[:64]))
            names.add(name)
            if kind == 'enum':
                items.append(name)
            else:
                if self.peek() != ':':
                    self.fail('expected ":" after the field name')
                self.i += 1
                self.skip_space()
                items.append((name, self.type(depth)))
            self.skip_space()
            c = self.peek()
            if c == ')':
                break
            if c != ',':
                self.fail('expected "," or ")"')
            self.i += 1
        self.i += 1
        return (kind, items)

    def type(self, depth):
        if depth >= PARSE_DEPTH_MAX:
            self.fail('types nested too deeply')
        if self.peek() == '?':
            if self.peek(2) == '??':
                self.fail('expected a type after "?", not another "?"')
            self.i += 1
            return ('optional', self.type(depth + 1))
        if self.peek(2) == '[]':
            self.i += 2
            return ('array', self.type(depth + 1))
        if self.peek(8) == '[string]':
            self.i += 8
            return ('map', self.type(depth + 1))
        return self.element(depth + 1)

    def element(self, depth):
        if self.peek() == '(':
            return self.struct_or_enum(depth)
        w = self.word()
        if w in _BUILTINS:
            self.i += len(w)
            return (w,)
        if not _TYPE_NAME_RE.fullmatch(w):
            self.fail('expected a type (bool, int, float, string, object, a type name, '
                      '"(", "?", "[]" or "[string]")')
        self.i += len(w)
        return ('named', w, self.line)


def _check_names(t, types, fail):
    """Every named type must be a typedef of the interface."""
    kind = t[0]
    if kind == 'named' and t[1] not in types:
        fail(t[2], "unknown type '%s'" % t[1][:64])
    if kind in ('optional', 'array', 'map'):
        _check_names(t[1], types, fail)
    if kind == 'struct':
        for _, ft in t[1]:
            _check_names(ft, types, fail)


class Interface:
    def __init__(self, text):
        if len(text) > TEXT_MAX:
            raise ValueError('interface description too large')
        p = _Parser(text)
        self.name = p.interface()
        members = {}
        while True:
            p.skip_space()
            if p.i >= len(p.s):
                break
            p.member(members)
        self.types = {n: m[1] for n, m in members.items() if m[0] == 'type'}
        self.methods = {n: (m[1], m[2]) for n, m in members.items() if m[0] == 'method'}
        self.errors = {n: m[1] for n, m in members.items() if m[0] == 'error'}

        def fail(line, what):
            raise ParseError('line %d: %s' % (line, what))
        for n, m in members.items():
            for t in (m[1], m[2]):
                if t is not None:
                    _check_names(t, self.types, fail)

    def _member(self, table, name, what):
        prefix = self.name + '.'
        if name.startswith(prefix):
            name = name[len(prefix):]
        if name not in table:
            raise KeyError('%s has no %s %s' % (self.name, what, name))
        return table[name]

    def validate(self, method, params, direction='in'):
        if direction not in ('in', 'out'):
            raise ValueError("direction must be 'in' or 'out'")
        inp, out = self._member(self.methods, method, 'method')
        self._params(inp if direction == 'in' else out, params)

    def validate_error(self, name, params):
        self._params(self._member(self.errors, name, 'error'), params)

    def _params(self, t, params):
        if params is None:
            params = {}
        if not isinstance(params, dict):
            _fail('', 'expected an object')
        self._struct(t, params, 0, '')

    def _struct(self, t, v, depth, path):
        if not isinstance(v, dict):
            _fail(path, 'expected an object')
        fields = dict(t[1])
        for key in v:
            if key not in fields:
                _fail(_join(path, key), 'unknown member')
        for name, ft in t[1]:
            self._value(ft, v.get(name), depth + 1, _join(path, name))

    def _value(self, t, v, depth, path):
        if depth > DEPTH_MAX:
            _fail(path, 'nested too deeply')
        if t[0] == 'optional':
            if v is None:
                return
            t = t[1]
        if v is None:
            _fail(path, 'missing or null')
        if t[0] == 'named':
            t = self.types[t[1]]
        kind = t[0]
        if kind == 'struct':
            self._struct(t, v, depth, path)
        elif kind == 'enum':
            if not isinstance(v, str) or v not in t[1]:
                _fail(path, 'expected one of %s' % ', '.join(t[1]))
        elif kind == 'array':
            if not isinstance(v, list):
                _fail(path, 'expected an array')
            for i, e in enumerate(v):
                self._value(t[1], e, depth + 1, '%s[%d]' % (path, i))
        elif kind == 'map':
            if not isinstance(v, dict):
                _fail(path, 'expected an object (map)')
            for k, e in v.items():
                self._value(t[1], e, depth + 1, _join(path, k))
        elif not _scalar_ok(kind, v):
            _fail(path, 'expected %s, got %s' % (kind, type(v).__name__))


def _scalar_ok(kind, v):
    # bool is an int to Python, never to JSON.
    if kind == 'bool':
        return isinstance(v, bool)
    if kind == 'int':
        return isinstance(v, int) and not isinstance(v, bool)
    if kind == 'float':
        if isinstance(v, bool):
            return False
        return isinstance(v, int) or (isinstance(v, float) and math.isfinite(v))
    if kind == 'string':
        return isinstance(v, str)
    if kind == 'object':
        return isinstance(v, dict)
    return False


def _join(path, key):
    return key if not path else path + '.' + key


def _fail(path, what):
    err = ValueError("field '%s': %s" % (path or 'parameters', what))
    err.field = path or 'parameters'
    raise err


def parse(text):
    return Interface(text)


def load(path):
    with open(path, encoding='utf-8') as f:
        return Interface(f.read())


_default = None


def interfaces():
    """The interfaces of proto/, by name, loaded once."""
    global _default
    if _default is None:
        _default = {}
        for f in DEFAULT_FILES:
            path = os.path.join(_PROTO, f)
            if os.path.exists(path):
                iface = load(path)
                _default[iface.name] = iface
    return _default


def _find(qualified):
    """The interface a qualified name ("io.toolsd.Call") belongs to; an
    unqualified name means io.toolsd."""
    iface, _, member = qualified.rpartition('.')
    ifaces = interfaces()
    if not iface:
        return ifaces['io.toolsd'], member
    if iface not in ifaces:
        raise KeyError('unknown interface %s' % iface)
    return ifaces[iface], member


def validate(method, params, direction='in'):
    iface, member = _find(method)
    iface.validate(member, params, direction)


def validate_error(name, params):
    iface, member = _find(name)
    iface.validate_error(member, params)


def _expect_fail(fn, *args, field=None):
    try:
        fn(*args)
    except ValueError as e:
        if field is not None and getattr(e, 'field', None) != field:
            raise AssertionError('%r: wanted field %r, got %s' % (args, field, e))
        return str(e)
    raise AssertionError('accepted: %r' % (args,))


def _self_test():
    skill = {'name': 's', 'tools': ['run_shell'], 'limits': {'timeout_ms': 5}}
    ok = {'skill': skill, 'artifacts_root': '/a', 'env': {'A': '1'}, 'run_id': None}
    validate('OpenSession', ok)
    validate('io.toolsd.OpenSession', ok, 'in')
    bad = lambda **kw: dict(ok, **kw)
    _expect_fail(validate, 'OpenSession', bad(bogus=1), field='bogus')
    _expect_fail(validate, 'OpenSession', bad(skill=dict(skill, foo=1)), field='skill.foo')
    _expect_fail(validate, 'OpenSession', bad(skill=dict(skill, limits={'timeout_ms': 'x'})),
                 field='skill.limits.timeout_ms')
    _expect_fail(validate, 'OpenSession', bad(skill=dict(skill, limits={'timeout_ms': 2.0})),
                 field='skill.limits.timeout_ms')
    _expect_fail(validate, 'OpenSession', bad(skill=dict(skill, limits={'timeout_ms': True})),
                 field='skill.limits.timeout_ms')
    _expect_fail(validate, 'OpenSession', bad(skill={'tools': []}), field='skill.name')
    _expect_fail(validate, 'OpenSession', bad(skill=dict(skill, name=None)), field='skill.name')
    _expect_fail(validate, 'OpenSession', bad(skill=dict(skill, tools=['a', 1])),
                 field='skill.tools[1]')
    _expect_fail(validate, 'OpenSession', bad(env={'A': 1}), field='env.A')
    _expect_fail(validate, 'OpenSession', {}, field='skill')
    _expect_fail(validate, 'OpenSession', [], field='parameters')

    status = {'version': '0.1.0', 'uptime_seconds': 1, 'mode': 'user', 'uid': 1000,
              'sessions': 0, 'running_calls': 0, 'connections': 1, 'backend': 'bwrap',
              'sandbox_available': True, 'require_sandbox': False}
    validate('Status', status, 'out')
    validate('Status', None, 'in')
    _expect_fail(validate, 'Status', dict(status, uid='0'), 'out', field='uid')
    s2 = dict(status)
    del s2['backend']
    _expect_fail(validate, 'Status', s2, 'out', field='backend')
    validate('Call', {'call_id': 'c', 'result': {'outcome': 'ok', 'text': '', 'sandboxed': True,
                                                 'duration_ms': 1, 'truncated': False}}, 'out')
    _expect_fail(validate, 'ListTools', {'tools': [{'name': 'a', 'description': 'd',
                                                    'parameters': {}}, {'name': 'b'}]}, 'out',
                 field='tools[1].description')
    validate_error('io.toolsd.LimitExceeded', {'what': 'calls', 'limit': 4})
    _expect_fail(validate_error, 'LimitExceeded', {'what': 'calls', 'limit': 4.5}, field='limit')
    validate_error('org.varlink.service.InvalidParameter', {'parameter': 'skill'})
    validate_error('org.varlink.service.PermissionDenied', None)
    for name in ('Nope', 'org.example.Nope', 'io.toolsd.Skill'):
        try:
            validate(name, {})
        except KeyError:
            pass
        else:
            raise AssertionError('unknown method %s accepted' % name)

    t = parse('# t\ninterface a.b\ntype C (red, blue)\ntype N (n: ?[]N)\n'
              'method M(c: C, s: ?[string](), g: ?[][]?float, i: ?(x: int), r: ?N) -> ()\n')
    t.validate('M', {'c': 'red', 's': {'a': {}}, 'g': [[1, 2.5, None]], 'i': {'x': 1}})
    _expect_fail(t.validate, 'M', {'c': 'Red'}, field='c')
    _expect_fail(t.validate, 'M', {'c': 'red', 's': {'a': 1}}, field='s.a')
    _expect_fail(t.validate, 'M', {'c': 'red', 'g': [[1], ['x']]}, field='g[1][0]')
    _expect_fail(t.validate, 'M', {'c': 'red', 'g': [[float('nan')]]}, field='g[0][0]')
    _expect_fail(t.validate, 'M', {'c': 'red', 'i': {'x': 1, 'y': 2}}, field='i.y')
    deep = {}
    node = deep
    for _ in range(100):
        node['n'] = [{}]
        node = node['n'][0]
    _expect_fail(t.validate, 'M', {'c': 'red', 'r': deep})

    for text, msg in (
            ('', 'line 1: expected "interface"'),
            ('# c\nmethod F() -> ()\n', 'line 2: expected "interface"'),
            ('interface ab\n', 'line 1: expected an interface name (e.g. org.example.service)'),
            ('interface a.b\nmethod F(a: int -> ()\n', 'line 2: expected "," or ")"'),
            ('interface a.b\nmethod F(a: int) -> (\n', 'line 3: expected a field name'),
            ('interface a.b\ntype foo (a: int)\n', 'line 2: expected a name after "type" '
             '(a capital letter, then letters and digits)'),
            ('interface a.b\nmethod F(a: int,\n a: int) -> ()\n', "line 3: duplicate field 'a'"),
            ('interface a.b\ntype T ()\nerror T ()\n', "line 3: duplicate member 'T'"),
            ('interface a.b\nmethod F(a: X) -> ()\n', "line 2: unknown type 'X'"),
            ('interface a.b\nmethod F(a: ??int) -> ()\n',
             'line 2: expected a type after "?", not another "?"'),
            ('interface a.b\nmethod F(a, b) -> ()\n', 'line 2: expected a struct, not an enum'),
            ('interface a.b\ntype T (a: ' + '[]' * 100 + 'int)\n',
             'line 2: types nested too deeply')):
        try:
            parse(text)
        except ParseError as e:
            if str(e) != msg:
                raise AssertionError('%r: wanted %r, got %r' % (text, msg, str(e)))
        else:
            raise AssertionError('parsed: %r' % text)
    print('varlink_idl: self-test passed (%s)' % ', '.join(sorted(interfaces())))


if __name__ == '__main__':
    _self_test()
