"""A stand-in for the Avalon Project's page of the Constitution of New York (1777), invented here.

The NY Constitution lab downloads ``https://avalon.law.yale.edu/18th_century/ny01.asp``,
converts its HTML to text with html2text and grows a vocabulary on the paragraphs. We do not
commit that page, so tests, CI and the benchmark use this one instead: a page of the same
shape (a header table with a logo and navigation links, a document title, one ``<p>`` per
article, footnote links, a footer) holding the made-up "Constitution of the Stand-in
Province", written from our own sentence templates in an 18th-century manner.

Two things are there on purpose, to exercise the lab's loader:

* the page is encoded in **windows-1252** and says so in its ``<meta>``, and the text holds
  ``£``, ``§``, curly quotes, dashes and accented names. Decoded with the wrong charset it
  shows mojibake (``Â£``) or control characters (the curly quotes are bytes 0x93 and 0x94,
  which ISO-8859-1 leaves as C1 controls);
* the ``<title>`` says ``STAND-IN``, so the loader can tell the student.

    >>> html = page(articles=2, seed=1)
    >>> "STAND-IN" in html and 'charset=windows-1252' in html
    True

``write(directory)`` writes the small commit-ready page (about 3,000 words);
``write(directory, full_size=True)`` writes one the size of the real page (about 40,000
words of text), for the benchmark. Both are deterministic.
"""
from __future__ import annotations

import random
from pathlib import Path

FILE_NAME = "ny01.asp"
ENCODING = "windows-1252"
SEED = 1777
SMALL_ARTICLES = 24
# The articles average about 120 words; 330 of them give about 40,000 words of text.
FULL_SIZE_ARTICLES = 330
ARTICLES_PER_CHAPTER = 20

OFFICES = [
    "governor", "lieutenant-governor", "chancellor", "treasurer", "secretary of the province",
    "sheriff", "coroner", "clerk of the peace", "surveyor-general", "attorney-general",
    "register of deeds", "keeper of the great seal", "harbour-master", "collector of tolls",
    "master of the rolls", "auditor of accounts",
]
BODIES = [
    "the assembly", "the senate", "the council of revision", "the council of appointment",
    "the court of chancery", "the supreme court of judicature", "the freeholders of each county",
    "the electors of each district", "the justices of the county courts", "the legislature",
]
COUNTIES = [
    "Ashgrove", "Bellmere", "Coldwater", "Dunmarsh", "Elmhaven", "Fairholt", "Greywick",
    "Hollowford", "Ironbridge", "Kestrelmoor", "Larkspur", "Millbrook", "Northwold", "Oakenfield",
    "Pennyfold", "Quarrington", "Redcliffe", "Stonebury", "Thornvale", "Westmarch",
    "Sainte-Agathe-des-Prés", "Mont-Léger", "Belle-Rivière", "Côte-Blanche",
]
RIVERS = ["the river Ashburn", "the Coldwater creek", "the river Léger", "the Greywick falls",
          "the Northwold sound"]
TOWNS = ["Ashgrove", "Port Bellmere", "Fairholt", "New Greywick", "Stonebury", "Mont-Léger"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
ORDINALS = ["first", "second", "third", "fourth", "last"]
NUMBER_WORDS = ["two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "twelve",
                "fifteen", "twenty", "twenty-four"]
AMOUNTS = ["20", "40", "50", "100", "250", "500", "1,000"]
DUTIES = [
    "keep a true account of all monies received and paid out",
    "cause the laws to be printed and sent to every town",
    "see that the roads and bridges of each county be kept in good repair",
    "provide for the relief of the poor in every township",
    "keep the public records in a safe and dry place",
    "settle the boundaries between the several counties",
    "inquire into the state of the public schools",
    "examine the accounts of every collector of tolls",
]
CONCERNS = [
    "the public monies be faithfully kept",
    "the rights of the people be not left uncertain",
    "elections be free and frequent",
    "no man hold two offices of profit at once",
    "justice be done speedily and without charge",
    "the militia be kept ready for the common defence",
    "the laws be known to all who must obey them",
]
SYLLABLES = ["ab", "el", "or", "wyn", "ton", "ric", "mar", "bel", "hal", "dun", "ster", "ing",
             "cor", "ven", "lis", "gar", "mond", "é", "ham", "ley"]
FIRST_NAMES = ["John", "Philip", "Abraham", "Robert", "Henry", "Gerard", "Isaac", "Lewis",
               "Zéphirin", "Matthew", "Jacobus", "Anthony", "William", "Egbert", "Peter"]

SENTENCES = [
    "That the {office} shall be chosen by {body} once in every {number} years, and shall hold the "
    "said office until another be duly chosen and qualified in his stead.",
    "That no person shall be eligible to the office of {office} who shall not be possessed of a "
    "freehold "
    "of the value of £{amount} within the county of {county}, over and above all debts charged "
    "thereon.",
    "And whereas it is of great importance to the safety of this Province that {concern}, this "
    "convention doth therefore declare that {body} shall {duty}.",
    "That {body} shall meet at least once in every year, at the town of {town}, on the {ordinal} "
    "{weekday} of {month}, unless the {office} shall, for good reasons, appoint another place.",
    "That the records of {body} shall be kept by the {office}, who shall lay them before {body2} "
    "whenever required \u2014 a duty which he shall not delegate to any deputy.",
    "Provided always, that nothing in this article shall be construed to deprive any freeholder of "
    "the "
    "county of {county} of his vote, nor to abridge the \u201cancient liberties\u201d of the same.",
    "That every {office} shall, before he enter upon the execution of his office, take an oath for "
    "the faithful performance of the same, in the presence of {body}.",
    "That the number of senators for the district of {county} shall be {number}, and the number of "
    "members of the assembly {number2}, until the census hereinafter directed shall be taken.",
    "That all fines and forfeitures exceeding the sum of £{amount} shall be paid into the "
    "treasury of the Province, and accounted for by the {office} at the end of each session.",
    "That any person accused before {body} shall be heard in his own defence, and may bring "
    "witnesses and counsel of his own choosing; and no such person shall be twice tried for the "
    "same offence.",
    "That a census of the inhabitants of {county} shall be taken every {number} years by the "
    "{office}, and the seats of the assembly shared anew according to the numbers so found.",
    "That the tolls upon {river} shall not exceed {number} pence for every hundredweight of goods, "
    "nor shall any new toll be laid without the consent of {body}.",
    "That the {office} of the county of {county} shall keep the \u2018Freeholders\u2019 Roll\u2019 "
    "(see \u00a7 {section} of this article), and shall correct it yearly in the month of {month}.",
    "That the militia of this Province shall at all times be kept armed and disciplined, and the "
    "{office} shall keep in every county a proper magazine of powder and stores.",
]


def roman(number: int) -> str:
    """``1777 -> "MDCCLXXVII"``."""
    numerals = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
                (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
    letters = []
    for value, numeral in numerals:
        while number >= value:
            letters.append(numeral)
            number -= value
    return "".join(letters)


def invented_name(rng: random.Random) -> str:
    """A delegate's name built from syllables: the long tail of rare words real text has."""
    surname = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3)))
    return f"{rng.choice(FIRST_NAMES)} {surname.capitalize()}"


def sentence(rng: random.Random) -> str:
    template = rng.choice(SENTENCES)
    return template.format(
        office=rng.choice(OFFICES), body=rng.choice(BODIES), body2=rng.choice(BODIES),
        county=rng.choice(COUNTIES), river=rng.choice(RIVERS), town=rng.choice(TOWNS),
        month=rng.choice(MONTHS), weekday=rng.choice(WEEKDAYS), ordinal=rng.choice(ORDINALS),
        number=rng.choice(NUMBER_WORDS), number2=rng.choice(NUMBER_WORDS),
        amount=rng.choice(AMOUNTS),
        duty=rng.choice(DUTIES), concern=rng.choice(CONCERNS), section=rng.randint(1, 9),
    )


def article_paragraphs(articles: int, rng: random.Random) -> list[str]:
    """HTML paragraphs: chapter headings, then numbered articles of two to five sentences."""
    paragraphs = []
    footnote = 0
    for index in range(articles):
        if index % ARTICLES_PER_CHAPTER == 0:
            chapter = index // ARTICLES_PER_CHAPTER + 1
            paragraphs.append(f"<p><b>CHAPTER {roman(chapter)}.</b> Of the {rng.choice(OFFICES)} "
                              f"and of {rng.choice(BODIES)}.</p>")
        text = " ".join(sentence(rng) for _ in range(rng.randint(2, 5)))
        if rng.random() < 0.15:
            footnote += 1
            text += f'<a href="#fn{footnote}" name="ref{footnote}"><sup>{footnote}</sup></a>'
        paragraphs.append(f"<p>{roman(index % ARTICLES_PER_CHAPTER + 1)}. {text}</p>")
    return paragraphs


def page(articles: int = SMALL_ARTICLES, seed: int = SEED) -> str:
    """The whole stand-in page as a str; encode it with ``ENCODING``."""
    rng = random.Random(seed)
    preamble = (
        "<p>In Convention of the Representatives of the Stand-in Province, at Fairholt, "
        "April 20, 1777.</p>\n"
        "<p>Whereas the freeholders of the several counties of this Province have, by their "
        "delegates, desired that a form of government be settled among them \u2014 one which "
        "shall secure their liberties and be easily understood \u2014 this convention doth, in "
        "their name, establish the following articles.</p>"
    )
    delegates = ", ".join(invented_name(rng) for _ in range(max(6, articles // 2)))
    footnotes = "\n".join(
        f'<p><a name="fn{n}" href="#ref{n}">{n}</a> Struck out in the engrossed copy and '
        f"restored by order of the convention of {rng.choice(MONTHS)} {rng.randint(1, 28)}, "
        "1777.</p>"
        for n in range(1, 4)
    )
    body = "\n".join(article_paragraphs(articles, rng))
    return f"""<!DOCTYPE html PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN">
<html>
<head>
<meta http-equiv="Content-Type" content="text/html; charset={ENCODING}">
<title>STAND-IN \u2014 Constitution of the Stand-in Province : April 20, 1777 \
(invented text, not the Avalon Project)</title>
<link rel="stylesheet" href="../css/site.css" type="text/css">
</head>
<body>
<div class="HeadTable">
<table width="100%" summary="navigation"><tr>
<td><a href="../default.asp"><img src="../images/standin_logo.gif" alt="Stand-in logo" \
width="120" height="60"></a></td>
<td><a href="../default.asp">Home</a> | <a href="../18th.asp">18th Century Documents</a> | \
<a href="../search.asp">Search</a> | <a href="../help.asp">Help</a></td>
<td><img src="../images/quill.gif" alt="quill"> <a href="ny02.asp">Next document</a></td>
</tr></table>
</div>
<hr>
<div class="document-title"><h3>Constitution of the Stand-in Province : April 20, 1777</h3></div>
<p><i>This page is a STAND-IN written for BPE Labs; none of its text comes from the Avalon \
Project.</i></p>
{preamble}
{body}
<p>By order of the Convention, {invented_name(rng)}, President. Delegates present: {delegates}.</p>
<hr>
<div class="footnotes">
{footnotes}
</div>
<div class="FootTable">
<table width="100%" summary="footer"><tr>
<td><a href="../default.asp"><img src="../images/standin_footer.gif" alt="Home"></a></td>
<td>Stand-in page \u00b7 generated by \
<a href="https://github.com/bpe-labs/bpe-labs">BPE Labs</a></td>
</tr></table>
</div>
</body>
</html>
"""


def write(directory: Path, full_size: bool = False) -> list[Path]:
    """Write ``ny01.asp`` (windows-1252 bytes) into ``directory``; returns the paths written."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / FILE_NAME
    articles = FULL_SIZE_ARTICLES if full_size else SMALL_ARTICLES
    path.write_bytes(page(articles).encode(ENCODING))
    return [path]


if __name__ == "__main__":
    import sys

    for written in write(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("data/standins")):
        print(written)
