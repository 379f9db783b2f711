"""A stand-in for the Africa Galore paragraphs, written from our own sentence templates.

The Africa Galore lab trains BPE on about 230 short paragraphs about African places, foods
and music (about 31,000 words). We may not commit that text, so tests, CI and the demo use
this stand-in instead: the same shape (a JSON list of records with a ``description``), every
record marked ``"standin": true`` so the lab's loader says STAND-IN, and text that reads like
the real thing closely enough for BPE to find the same kind of merges (``th``, ``e</w>``,
``ing</w>``, place and dish names). Some names are invented on purpose (markets, villages,
musicians built from syllables): they give the long tail of rare words that real text has,
which is what makes the naive learn loop slow.

    >>> records = paragraphs(3, seed=1)
    >>> sorted(records[0])
    ['description', 'standin', 'title']

``write(directory)`` writes the small commit-ready file (about 20 paragraphs);
``write(directory, full_size=True)`` writes one the size of the real data, for benchmarks.
Both are deterministic.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

FILE_NAME = "africa_galore.json"
SMALL_PARAGRAPHS = 20
FULL_SIZE_PARAGRAPHS = 230
# The real paragraphs average about 135 words; aim for the same so 230 give about 31,000 words.
WORDS_PER_PARAGRAPH = (100, 160)
SEED = 2024

PLACES = [
    ("Lagos", "Nigeria"), ("Accra", "Ghana"), ("Dakar", "Senegal"), ("Nairobi", "Kenya"),
    ("Kigali", "Rwanda"), ("Zanzibar", "Tanzania"), ("Marrakesh", "Morocco"), ("Timbuktu", "Mali"),
    ("Addis Ababa", "Ethiopia"), ("Kampala", "Uganda"), ("Lalibela", "Ethiopia"),
    ("Cape Town", "South Africa"),
    ("Luanda", "Angola"), ("Maputo", "Mozambique"), ("Windhoek", "Namibia"), ("Lusaka", "Zambia"),
    ("Harare", "Zimbabwe"), ("Kumasi", "Ghana"), ("Saint-Louis", "Senegal"), ("Mombasa", "Kenya"),
    ("Fez", "Morocco"), ("Cairo", "Egypt"), ("Tunis", "Tunisia"), ("Gaborone", "Botswana"),
]
LANDSCAPES = [
    "the Okavango Delta", "the Sahara", "Mount Kilimanjaro", "the Serengeti", "Lake Malawi",
    "the Namib Desert", "Victoria Falls", "the Nile valley", "the Rift Valley", "the Drakensberg",
    "Lake Victoria", "the Atlas Mountains", "the Skeleton Coast", "the Congo River",
]
FOODS = [
    ("jollof rice", "rice cooked slowly in a spiced tomato and pepper sauce"),
    ("injera", "a soft, spongy flatbread made from teff flour"),
    ("fufu", "a smooth dough pounded from cassava and plantain"),
    ("bobotie", "spiced minced meat baked under a golden egg topping"),
    ("suya", "thin skewers of beef rubbed with ground peanuts and chilli"),
    ("ugali", "a firm maize porridge eaten with the fingers"),
    ("tagine", "a stew cooked gently in a clay pot with a cone-shaped lid"),
    ("thieboudienne", "fish and rice simmered with tomatoes, cassava and carrots"),
    ("egusi soup", "a thick soup of ground melon seeds and leafy greens"),
    ("kelewele", "fried plantain cubes seasoned with ginger and pepper"),
    ("mandazi", "lightly sweet fried dough flavoured with cardamom"),
    ("nyama choma", "goat or beef grilled over charcoal"),
    ("koshari", "lentils, rice and pasta topped with a tangy tomato sauce"),
    ("matoke", "green bananas steamed and mashed with onions"),
    ("bunny chow", "a hollowed loaf of bread filled with curry"),
    ("chakalaka", "a spicy relish of beans, peppers and carrots"),
    ("kenkey", "fermented maize dumplings wrapped in husks"),
    ("piri piri chicken", "chicken grilled with a fiery chilli marinade"),
]
MUSIC = [
    ("highlife", "guitars and horns"), ("afrobeats", "drum machines and bright synthesizers"),
    ("mbalax", "the sabar drum"), ("soukous", "fast, ringing guitar lines"),
    ("kwaito", "slow house beats"), ("amapiano", "log drums and soft piano chords"),
    ("gnawa", "the three-stringed guembri"), ("taarab", "strings, accordion and poetry"),
    ("benga", "a bouncing bass guitar"), ("juju", "talking drums and steel guitar"),
    ("makossa", "a driving bass and brass"), ("chimurenga", "the mbira"),
    ("isicathamiya", "close a cappella harmonies"), ("desert blues", "hypnotic electric guitars"),
]
ADJECTIVES = [
    "busy", "colourful", "lively", "quiet", "ancient", "famous", "beloved", "bustling", "peaceful",
    "historic", "vibrant", "welcoming", "remarkable", "popular", "traditional", "modern",
    "celebrated",
]
TIMES = ["every morning", "on weekends", "during the rainy season", "at dusk", "on market days",
         "during festivals", "late into the night", "in the dry season", "at sunrise",
         "on holidays"]
PEOPLE = ["families", "visitors", "traders", "students", "musicians", "fishermen", "farmers",
          "young people", "elders", "cooks", "dancers", "travellers", "children", "artists"]

SYLLABLES = ["ka", "lo", "mba", "ngo", "ta", "ri", "zi", "wa", "ye", "ku", "so", "ma", "di",
             "nke", "bo", "fa", "gu", "la", "ne", "tu", "mi", "sha", "ko", "ra", "ju", "pe"]

OPENINGS = {
    "place": [
        "{place} is a {adj} city in {country}, known for {thing}.",
        "Few places feel as {adj} as {place}, a city in {country} where {people} gather {time}.",
        "{place}, in {country}, is {adj} and full of life.",
    ],
    "food": [
        "{Food} is {food_desc}, and it is one of the most {adj} dishes in {country}.",
        "In {country}, {food} means {food_desc}.",
        "Ask anyone in {place} about {food} and they will describe {food_desc}.",
    ],
    "music": [
        "{Music} is a {adj} style of music from {country}, built around {sound}.",
        "The sound of {music} comes from {country}, where musicians play it with {sound}.",
        "In {place}, {music} fills the streets {time}, carried by {sound}.",
    ],
}
SENTENCES = [
    "The {adj} market of {name} sells {food} {time}.",
    "{People} walk to {landscape} {time} to watch the light change.",
    "In the village of {name}, {people} still cook {food} the way their grandparents did.",
    "The musician {person} learned {music} from an uncle and now plays in {place}.",
    "Many {people} say that {food} tastes best when it is shared.",
    "A festival in {year} brought {number} {people} to {place} to celebrate {music}.",
    "The road from {place} to {landscape} passes through {name} and {name2}.",
    "{Person} opened a small restaurant in {place} in {year}, serving {food} and {food2}.",
    "Local guides tell stories about {landscape} and the people who lived near it.",
    "The old quarter of {place} has narrow streets, {adj} courtyards and painted doors.",
    "When {people} gather {time}, someone always starts to play {music}.",
    "Recipes for {food} change from family to family, and every cook is sure theirs is the best.",
    "About {number} people live in {name}, a {adj} town near {landscape}.",
    "Schools in {place} teach children the songs of {music} and the history of {country}.",
    "The band {person} and the {name} Stars recorded their first album in {year}.",
    "Travellers often stop in {name} to rest, eat {food} and listen to {music}.",
    "{Landscape} is home to elephants, lions, birds and many other animals.",
    "Writers from {country} have described {landscape} in poems, novels and songs.",
    "Street vendors in {place} call out the prices of {food} and {food2}.",
    "It is said that the recipe for {food} travelled along the old trade routes.",
    "{Person} and {person2} sell {food} at the crossroads between {name} and {name2}.",
    "The {name} river flows past {name2}, where {people} fish {time}.",
    "Guests at the {name} guesthouse in {place} are greeted with {food} and songs of {music}.",
    "Dancers from {name} won a prize in {year} for a new {music} routine by {person}.",
]


def invented_name(rng: random.Random, syllables: int) -> str:
    """A made-up name from our syllable list: ``2 -> "Kalo"``. Clearly not a real place."""
    return "".join(rng.choice(SYLLABLES) for _ in range(syllables)).capitalize()


def _slots(
    rng: random.Random, place: tuple[str, str], food: tuple[str, str], music: tuple[str, str]
) -> dict[str, str]:
    """Fill every template slot once; each sentence picks the slots it names."""
    other_food = rng.choice(FOODS)[0]
    landscape = rng.choice(LANDSCAPES)
    people = rng.choice(PEOPLE)
    person, person2 = (f"{invented_name(rng, 2)} {invented_name(rng, rng.randint(2, 4))}"
                       for _ in range(2))
    slots = {
        "place": place[0], "country": place[1], "food": food[0], "food_desc": food[1],
        "food2": other_food, "music": music[0], "sound": music[1], "landscape": landscape,
        "people": people, "person": person, "person2": person2, "adj": rng.choice(ADJECTIVES),
        "time": rng.choice(TIMES), "name": invented_name(rng, rng.randint(2, 3)),
        "name2": invented_name(rng, rng.randint(2, 3)),
        "year": str(rng.randint(1950, 2023)), "number": f"{rng.randint(2, 90) * 100:,}",
        "thing": rng.choice([f"its {food[0]}", f"its {music[0]} clubs",
                             f"the views of {landscape}"]),
    }
    # Sentence-initial variants of the slots that can start a sentence.
    for key in ("food", "music", "people", "person", "landscape"):
        slots[key.capitalize()] = slots[key][0].upper() + slots[key][1:]
    return slots


def paragraph(rng: random.Random) -> dict[str, object]:
    """One record: a title and a description of about 135 words about one place, dish or style."""
    topic = rng.choice(["place", "food", "music"])
    place, food, music = rng.choice(PLACES), rng.choice(FOODS), rng.choice(MUSIC)
    target = rng.randint(*WORDS_PER_PARAGRAPH)
    sentences = [rng.choice(OPENINGS[topic]).format(**_slots(rng, place, food, music))]
    words = len(sentences[0].split(" "))
    while words < target:
        sentence = rng.choice(SENTENCES).format(**_slots(rng, place, food, music))
        sentences.append(sentence)
        words += len(sentence.split(" "))
    title = {"place": place[0], "food": food[0].title(), "music": music[0].title()}[topic]
    return {"title": f"STAND-IN: {title}", "description": " ".join(sentences), "standin": True}


def paragraphs(count: int, seed: int = SEED) -> list[dict[str, object]]:
    """``count`` records from a generator seeded with
    ``seed``: the same call gives the same text."""
    rng = random.Random(seed)
    return [paragraph(rng) for _ in range(count)]


def write(directory: Path, full_size: bool = False) -> list[Path]:
    """Write ``africa_galore.json`` into ``directory``: 20 paragraphs, or 230 when ``full_size``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    count = FULL_SIZE_PARAGRAPHS if full_size else SMALL_PARAGRAPHS
    path = directory / FILE_NAME
    path.write_text(json.dumps(paragraphs(count), ensure_ascii=False, indent=1) + "\n",
                    encoding="utf-8")
    return [path]


if __name__ == "__main__":
    print(*write(Path(__file__).resolve().parents[2] / "data" / "standins"), sep="\n")
