"""Reproducer snippets for the standard-library modules of the benchmark.

Each module maps to ``(import line, name bound in the snippet, snippets)``; a snippet is Python
code that sets ``result`` using only the public API, and names the API it calls (the gold
function of a bug must be another function: a helper at least one call below the API).
"""

from __future__ import annotations

_HTML_PRELUDE = """class Collector(parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.events = []
    def handle_starttag(self, tag, attrs):
        self.events.append(('start', tag, attrs))
    def handle_startendtag(self, tag, attrs):
        self.events.append(('startend', tag, attrs))
    def handle_endtag(self, tag):
        self.events.append(('end', tag))
    def handle_data(self, data):
        self.events.append(('data', data))
    def handle_comment(self, data):
        self.events.append(('comment', data))
    def handle_decl(self, decl):
        self.events.append(('decl', decl))
    def handle_pi(self, data):
        self.events.append(('pi', data))
    def unknown_decl(self, data):
        self.events.append(('unknown', data))
p = Collector()
"""


def _html(doc: str, charrefs: bool = True) -> str:
    init = "" if charrefs else "p.convert_charrefs = False\n"
    return _HTML_PRELUDE + init + f"p.feed({doc!r})\np.close()\nresult = p.events\n"


# module path in the repository -> (import line, bound name, [(snippet, API qualnames)])
REPRODUCERS: dict[str, tuple[str, str, list[tuple[str, tuple[str, ...]]]]] = {
    "textwrap.py": (
        "import textwrap",
        "textwrap",
        [
            (
                "result = textwrap.wrap('The quick brown fox jumps over the lazy dog. It was "
                "tired.  Yes!', width=15)",
                ("wrap",),
            ),
            (
                "result = textwrap.fill('Hello   world\\tagain, a supercalifragilistic word "
                "here', width=10)",
                ("fill",),
            ),
            (
                "result = textwrap.shorten('Hello  world! This is a long sentence to shorten', "
                "width=25, placeholder='...')",
                ("shorten",),
            ),
            (
                "result = textwrap.wrap('one two three. four five. six', width=12, "
                "fix_sentence_endings=True, break_on_hyphens=False)",
                ("wrap",),
            ),
            (
                "result = textwrap.wrap('a-very-long-hyphenated-compound word and more words', "
                "width=8, max_lines=3)",
                ("wrap",),
            ),
            (
                "result = textwrap.fill('Lorem ipsum dolor sit amet consectetur adipiscing', "
                "width=14, initial_indent='* ', subsequent_indent='  ', drop_whitespace=False)",
                ("fill",),
            ),
            (
                "result = textwrap.wrap('tabs\\there and\\tthere', width=9, expand_tabs=True, "
                "tabsize=4, break_long_words=False)",
                ("wrap",),
            ),
        ],
    ),
    "difflib.py": (
        "import difflib",
        "difflib",
        [
            (
                "result = difflib.SequenceMatcher(None, 'abxcd', 'abcd').ratio()",
                ("SequenceMatcher.ratio", "SequenceMatcher.__init__"),
            ),
            (
                "result = list(difflib.unified_diff(['a\\n', 'b\\n', 'c\\n', 'd\\n'], "
                "['a\\n', 'B\\n', 'c\\n', 'd\\n', 'e\\n'], 'x', 'y', n=1))",
                ("unified_diff",),
            ),
            (
                "result = list(difflib.context_diff(['one\\n', 'two\\n', 'three\\n', 'four\\n'], "
                "['one\\n', 'tree\\n', 'three\\n', 'five\\n'], n=1))",
                ("context_diff",),
            ),
            (
                "result = list(difflib.ndiff(['one\\n', 'two\\n', 'three\\n'], "
                "['ore\\n', 'tree\\n', 'emu\\n']))",
                ("ndiff",),
            ),
            (
                "result = difflib.get_close_matches('appel', ['ape', 'apple', 'peach', 'puppy'], "
                "n=3, cutoff=0.5)",
                ("get_close_matches",),
            ),
            (
                "result = difflib.SequenceMatcher(None, 'private Thread currentThread;', "
                "'private volatile Thread currentThread;').get_opcodes()",
                ("SequenceMatcher.get_opcodes", "SequenceMatcher.__init__"),
            ),
            (
                "result = list(difflib.SequenceMatcher(None, list(range(20)), "
                "list(range(3, 25))).get_grouped_opcodes(2))",
                ("SequenceMatcher.get_grouped_opcodes", "SequenceMatcher.__init__"),
            ),
            (
                "result = difflib.SequenceMatcher(lambda c: c == ' ', 'a b c d e', "
                "'a bc d f').get_matching_blocks()",
                ("SequenceMatcher.get_matching_blocks", "SequenceMatcher.__init__"),
            ),
            (
                "result = list(difflib.Differ().compare(['abcdefgh\\n', 'same\\n'], "
                "['abcdxfgh\\n', 'same\\n']))",
                ("Differ.compare", "Differ.__init__"),
            ),
        ],
    ),
    "fractions.py": (
        "import fractions",
        "fractions",
        [
            (
                "result = str(fractions.Fraction(3, -12) + fractions.Fraction('1/6'))",
                ("Fraction.__new__",),
            ),
            (
                "result = str(fractions.Fraction('3.1415').limit_denominator(100))",
                ("Fraction.limit_denominator", "Fraction.__new__"),
            ),
            (
                "a, b = fractions.Fraction(7, 3), fractions.Fraction(1, 2)\n"
                "result = [str(a // b), str(a % b), str(divmod(a, b)), str(a * b), str(a / b), "
                "str(a - b)]",
                ("Fraction.__new__",),
            ),
            (
                "result = [str(fractions.Fraction(2, 3) ** 3), str(fractions.Fraction(4, 9) ** -1),"
                " fractions.Fraction(9, 4) ** 0.5]",
                ("Fraction.__new__",),
            ),
            (
                "result = [round(fractions.Fraction(5, 2)), round(fractions.Fraction(7, 2)), "
                "str(round(fractions.Fraction(22, 7), 2)), str(round(fractions.Fraction(-7, 4)))]",
                ("Fraction.__new__",),
            ),
            (
                "F = fractions.Fraction\n"
                "result = [F(1, 3) < F(1, 2), F(1, 2) == 0.5, F(2, 3) >= F(3, 5), float(F(1, 8)), "
                "hash(F(3, 6)) == hash(0.5), F(5, 3) > 1]",
                ("Fraction.__new__",),
            ),
            (
                "result = [str(fractions.Fraction(1.25)), repr(fractions.Fraction('-2.5e-1')), "
                "str(fractions.Fraction(' 7/-3 '.strip().replace('-', '')))]",
                ("Fraction.__new__",),
            ),
            (
                "F = fractions.Fraction\n"
                "result = [str(abs(F(-3, 4))), str(-F(3, 4)), int(F(-7, 2)), "
                "F(7, 2).__floor__(), F(7, 2).__ceil__(), str(F(3, 4).as_integer_ratio())]",
                ("Fraction.__new__",),
            ),
        ],
    ),
    "statistics.py": (
        "import statistics",
        "statistics",
        [
            (
                "result = statistics.median([5, 1, 3, 2, 4, 6]), "
                "statistics.median_low([5, 1, 3, 2])"
                ", statistics.median_high([5, 1, 3, 2])",
                ("median", "median_low", "median_high"),
            ),
            ("result = statistics.mean([1, 2, 3, 4, 4]), statistics.mean([1.5, 2.25])", ("mean",)),
            (
                "result = statistics.variance([2.75, 1.75, 1.25, 0.25, 0.5, 1.25, 3.5])",
                ("variance",),
            ),
            (
                "result = statistics.stdev([1.5, 2.5, 2.5, 2.75, 3.25, 4.75]), "
                "statistics.pstdev([1, 2, 3, 4])",
                ("stdev", "pstdev"),
            ),
            (
                "result = statistics.median_grouped([1, 2, 2, 3, 4, 4, 4, 4, 4, 5], 1)",
                ("median_grouped",),
            ),
            (
                "result = statistics.quantiles([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], n=4), "
                "statistics.quantiles([3, 1, 2], n=5, method='inclusive')",
                ("quantiles",),
            ),
            (
                "result = statistics.mode([1, 1, 2, 3, 3, 3, 4]), "
                "statistics.multimode('aabbbbccddddeeffffgg')",
                ("mode", "multimode"),
            ),
            (
                "result = statistics.harmonic_mean([40, 60]), "
                "statistics.geometric_mean([54, 24, 36])"
                ", statistics.harmonic_mean([2.5, 3, 10], weights=[1, 2, 3])",
                ("harmonic_mean", "geometric_mean"),
            ),
            (
                "result = statistics.correlation([1, 2, 3, 4, 5], [2, 4, 5, 4, 5]), "
                "statistics.covariance([1, 2, 3, 4], [1, 3, 2, 4]), "
                "statistics.linear_regression([1, 2, 3, 4, 5], [3, 5, 7, 9, 12])",
                ("correlation", "covariance", "linear_regression"),
            ),
            (
                "d = statistics.NormalDist(100, 15)\n"
                "result = d.cdf(120), d.pdf(90), d.overlap(statistics.NormalDist(110, 10)), "
                "statistics.NormalDist.from_samples([2.5, 3.1, 2.1, 2.4, 2.7, 3.5]).mean, "
                "(d + 5).mean, d.zscore(130)",
                (
                    "NormalDist.__init__",
                    "NormalDist.cdf",
                    "NormalDist.pdf",
                    "NormalDist.overlap",
                    "NormalDist.from_samples",
                    "NormalDist.zscore",
                    "NormalDist.__add__",
                ),
            ),
            (
                "from decimal import Decimal\n"
                "result = statistics.mean([Decimal('0.5'), Decimal('0.75')]), "
                "statistics.variance([Decimal('1.5'), Decimal('2.5'), Decimal('4')]), "
                "statistics.fmean([3.5, 4.0, 5.25])",
                ("mean", "variance", "fmean"),
            ),
        ],
    ),
    "configparser.py": (
        "import configparser",
        "configparser",
        [
            (
                "cp = configparser.ConfigParser()\n"
                "cp.read_string('[DEFAULT]\\nhome = /home/me\\n[paths]\\ndata = %(home)s/data\\n"
                "flag = yes\\ncount = 42\\nratio = 0.5\\n')\n"
                "result = (cp.get('paths', 'data'), cp.getboolean('paths', 'flag'), "
                "cp.getint('paths', 'count'), cp.getfloat('paths', 'ratio'), cp.sections())",
                ("ConfigParser.read_string", "RawConfigParser.read_string"),
            ),
            (
                "cp = configparser.ConfigParser()\n"
                "cp.read_string('[a]\\nkey = first\\n  second line\\n; comment\\nother: v\\n"
                "[b]\\nx=1\\n')\nresult = (dict(cp['a']), cp.items('b'))",
                ("RawConfigParser.read_string",),
            ),
            (
                "cp = configparser.ConfigParser(interpolation=configparser.ExtendedInterpolation())"
                "\ncp.read_string('[s]\\nx = 1\\n[t]\\ny = ${s:x}-2\\nz = $$5 ${y}\\n')\n"
                "result = (cp['t']['y'], cp['t']['z'])",
                ("RawConfigParser.read_string",),
            ),
            (
                "import io\ncp = configparser.ConfigParser()\n"
                "cp['s'] = {'a': '1', 'b': 'two\\nlines'}\ncp['DEFAULT'] = {'c': '3'}\n"
                "buf = io.StringIO()\ncp.write(buf)\nresult = buf.getvalue()",
                ("RawConfigParser.write",),
            ),
            (
                "cp = configparser.ConfigParser()\ntry:\n"
                "    cp.read_string('[a]\\nx=1\\n[a]\\n')\n    result = 'no error'\n"
                "except configparser.Error as e:\n    result = (type(e).__name__, str(e))",
                ("RawConfigParser.read_string",),
            ),
            (
                "cp = configparser.RawConfigParser(allow_no_value=True)\n"
                "cp.read_string('[m]\\nskip\\nv = %(x)s\\n')\n"
                "result = (cp.get('m', 'skip'), cp.get('m', 'v'), cp.has_option('m', 'skip'), "
                "cp.options('m'))",
                ("RawConfigParser.read_string",),
            ),
            (
                "cp = configparser.ConfigParser()\ncp.read_dict({'sec': {'k': 'v', 'n': '7'}})\n"
                "cp.set('sec', 'k', 'w')\ncp.remove_option('sec', 'n')\ncp.add_section('new')\n"
                "result = (list(cp['sec'].items()), cp.has_section('new'), "
                "cp.get('sec', 'missing', fallback='fb'))",
                ("RawConfigParser.read_dict",),
            ),
        ],
    ),
    "shlex.py": (
        "import shlex",
        "shlex",
        [
            ("result = shlex.split('a \"b c\" d\\\\ e \\'f g\\' h#i')", ("split",)),
            (
                "result = shlex.split('x=1 y=\"two words\" # comment here', comments=True)",
                ("split",),
            ),
            (
                "result = (shlex.quote(\"it's\"), shlex.quote(''), shlex.join(['a b', 'c', '$x']))",
                ("quote", "join"),
            ),
            (
                "lx = shlex.shlex('a && b || c; (d) > out', punctuation_chars=True)\n"
                "result = list(lx)",
                ("shlex.__init__",),
            ),
            (
                "lx = shlex.shlex('foo = bar.baz(1, \"x y\") # tail', posix=False)\n"
                "result = list(lx)",
                ("shlex.__init__",),
            ),
            (
                'lx = shlex.shlex(\'one "two \\\\"quoted\\\\"" three\', posix=True)\n'
                "lx.whitespace_split = True\nresult = list(lx)",
                ("shlex.__init__",),
            ),
        ],
    ),
    "ipaddress.py": (
        "import ipaddress",
        "ipaddress",
        [
            (
                "result = [str(n) for n in "
                "ipaddress.ip_network('192.168.0.0/22').subnets(prefixlen_diff=2)]",
                ("ip_network",),
            ),
            (
                "result = [str(n) for n in ipaddress.collapse_addresses(["
                "ipaddress.ip_network('10.0.0.0/25'), ipaddress.ip_network('10.0.0.128/25'), "
                "ipaddress.ip_network('10.0.1.0/24'), ipaddress.ip_network('10.0.3.0/24')])]",
                ("collapse_addresses", "ip_network"),
            ),
            (
                "result = (str(ipaddress.ip_address('2001:db8:0:0:1:0:0:1')), "
                "str(ipaddress.ip_address('::ffff:1.2.3.4').ipv4_mapped), "
                "ipaddress.ip_address('2001:db8::1').exploded)",
                ("ip_address",),
            ),
            (
                "result = [str(n) for n in ipaddress.summarize_address_range("
                "ipaddress.IPv4Address('10.0.0.3'), ipaddress.IPv4Address('10.0.0.17'))]",
                ("summarize_address_range",),
            ),
            (
                "net = ipaddress.ip_network('10.1.0.0/16')\n"
                "result = (str(net.netmask), str(net.hostmask), net.num_addresses, "
                "ipaddress.ip_address('10.1.255.7') in net, net.is_private, "
                "str(net.broadcast_address), str(list(net.hosts())[-1]))",
                ("ip_network",),
            ),
            (
                "result = [str(n) for n in ipaddress.ip_network('10.0.0.0/24').address_exclude("
                "ipaddress.ip_network('10.0.0.64/26'))]",
                ("ip_network",),
            ),
            (
                "result = (str(ipaddress.ip_interface('192.0.2.5/255.255.255.0')), "
                "ipaddress.ip_network('2001:db8::/126').supernet().compressed, "
                "str(ipaddress.ip_network('10.0.0.0/255.0.0.0')))",
                ("ip_interface", "ip_network"),
            ),
            (
                "result = (ipaddress.ip_address('192.168.1.1').reverse_pointer, "
                "int(ipaddress.IPv6Address('::1')), ipaddress.ip_address('127.0.0.1').is_loopback,"
                " str(ipaddress.IPv4Address(3232235777) + 3))",
                ("ip_address",),
            ),
        ],
    ),
    "calendar.py": (
        "import calendar",
        "calendar",
        [
            ("result = calendar.monthcalendar(2024, 2)", ("monthcalendar",)),
            (
                "result = calendar.TextCalendar(firstweekday=6).formatmonth(2023, 10)",
                ("TextCalendar.formatmonth",),
            ),
            (
                "result = (calendar.isleap(1900), calendar.leapdays(1900, 2025), "
                "calendar.monthrange(2024, 2), calendar.weekday(2000, 1, 1))",
                ("isleap", "leapdays", "monthrange", "weekday"),
            ),
            (
                "result = calendar.HTMLCalendar(firstweekday=1).formatmonth(2021, 5)",
                ("HTMLCalendar.formatmonth",),
            ),
            ("result = calendar.timegm((2020, 3, 1, 12, 30, 5))", ("timegm",)),
            (
                "result = (list(calendar.Calendar(2).itermonthdays2(2022, 12))[:10], "
                "calendar.Calendar().monthdays2calendar(2023, 1)[0])",
                ("Calendar.itermonthdays2", "Calendar.monthdays2calendar"),
            ),
            (
                "result = calendar.TextCalendar().formatyear(2024, w=2, l=1, c=3, m=4)",
                ("TextCalendar.formatyear",),
            ),
            (
                "result = (calendar.Calendar(6).yeardayscalendar(2021, width=2)[0][0][:2], "
                "list(calendar.Calendar().itermonthdates(2024, 3))[:3])",
                ("Calendar.yeardayscalendar", "Calendar.itermonthdates"),
            ),
        ],
    ),
    "html/parser.py": (
        "from html import parser",
        "parser",
        [
            (
                _html('<div class="a" id=x><p>Hi &amp; bye</p><!-- c --><br/></div>'),
                ("HTMLParser.feed",),
            ),
            (
                _html(
                    "<!DOCTYPE html><script>if (a < b) { x = '</p>'; }</script>"
                    "<a href='q?x=1&y=2'>l</a>"
                ),
                ("HTMLParser.feed",),
            ),
            (
                _html('<img src=x.png alt="A &lt; B"><p>text &#65;&#x42; end', charrefs=False),
                ("HTMLParser.feed",),
            ),
            (
                _html('<?xml version="1.0"?><![CDATA[x<y]]><em>e</em><style>p{}</style>'),
                ("HTMLParser.feed",),
            ),
            (
                _html("<table><tr><td valign=top nowrap>cell</td></tr></table>&nbsp;&copy;"),
                ("HTMLParser.feed",),
            ),
        ],
    ),
    "string.py": (
        "import string",
        "string",
        [
            (
                "result = (string.Template('$who likes ${what}; $$ cost').substitute(who='tim', "
                "what='pie'), string.Template('$a and $b').safe_substitute(a=1))",
                ("Template.substitute", "Template.safe_substitute"),
            ),
            (
                "result = string.capwords('  hello   world  again '), "
                "string.capwords('a-b c', '-')",
                ("capwords",),
            ),
            (
                "result = string.Formatter().format('{0:>5}|{name!r}|{1[0]}|{2.real}', 'a', [7], "
                "3, name='x')",
                ("Formatter.format",),
            ),
            (
                "result = (string.Template('${x} $y').get_identifiers(), "
                "string.Template('$x $$y').is_valid())",
                ("Template.get_identifiers", "Template.is_valid"),
            ),
        ],
    ),
    "gettext.py": (
        "import gettext",
        "gettext",
        [
            (
                "f = gettext.c2py('n==1 ? 0 : n%10>=2 && n%10<=4 && "
                "(n%100<10 || n%100>=20) ? 1 : 2')"
                "\nresult = [f(k) for k in (1, 2, 5, 22, 112, 0)]",
                ("c2py",),
            ),
            ("f = gettext.c2py('(n != 1)')\nresult = [f(k) for k in (0, 1, 2)]", ("c2py",)),
            (
                "f = gettext.c2py('n%10==1 && n%100!=11 ? 0 : n != 0 ? 1 : 2')\n"
                "result = [f(k) for k in (0, 1, 11, 21, 5)]",
                ("c2py",),
            ),
        ],
    ),
}
