"""The bilingual lexicon of the demo corpus: every English word the generator can say, with its Chinese.

Written for this project (no outside word lists). Each entry knows what it may combine with (tags), so the
generated sentences stay meaningful: one reads a book and drinks a cup of tea, never the reverse.
"""

# A data module (one table per word class); its length is the vocabulary's, split it and readers lose the overview.
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# --------------------------------------------------------------------------------------------------
# English morphology
# --------------------------------------------------------------------------------------------------

# base: (3rd person singular, past, past participle, -ing)
_IRREGULAR: dict[str, tuple[str, str, str, str]] = {
    "be": ("is", "was", "been", "being"),
    "have": ("has", "had", "had", "having"),
    "do": ("does", "did", "done", "doing"),
    "go": ("goes", "went", "gone", "going"),
    "buy": ("buys", "bought", "bought", "buying"),
    "read": ("reads", "read", "read", "reading"),
    "write": ("writes", "wrote", "written", "writing"),
    "eat": ("eats", "ate", "eaten", "eating"),
    "drink": ("drinks", "drank", "drunk", "drinking"),
    "see": ("sees", "saw", "seen", "seeing"),
    "take": ("takes", "took", "taken", "taking"),
    "make": ("makes", "made", "made", "making"),
    "get": ("gets", "got", "got", "getting"),
    "sell": ("sells", "sold", "sold", "selling"),
    "find": ("finds", "found", "found", "finding"),
    "lose": ("loses", "lost", "lost", "losing"),
    "bring": ("brings", "brought", "brought", "bringing"),
    "send": ("sends", "sent", "sent", "sending"),
    "sing": ("sings", "sang", "sung", "singing"),
    "draw": ("draws", "drew", "drawn", "drawing"),
    "swim": ("swims", "swam", "swum", "swimming"),
    "run": ("runs", "ran", "run", "running"),
    "sleep": ("sleeps", "slept", "slept", "sleeping"),
    "leave": ("leaves", "left", "left", "leaving"),
    "meet": ("meets", "met", "met", "meeting"),
    "come": ("comes", "came", "come", "coming"),
    "speak": ("speaks", "spoke", "spoken", "speaking"),
    "teach": ("teaches", "taught", "taught", "teaching"),
    "break": ("breaks", "broke", "broken", "breaking"),
    "steal": ("steals", "stole", "stolen", "stealing"),
    "pay": ("pays", "paid", "paid", "paying"),
    "spend": ("spends", "spent", "spent", "spending"),
    "lend": ("lends", "lent", "lent", "lending"),
    "ride": ("rides", "rode", "ridden", "riding"),
    "drive": ("drives", "drove", "driven", "driving"),
    "fly": ("flies", "flew", "flown", "flying"),
    "wear": ("wears", "wore", "worn", "wearing"),
    "give": ("gives", "gave", "given", "giving"),
    "win": ("wins", "won", "won", "winning"),
    "tell": ("tells", "told", "told", "telling"),
    "put": ("puts", "put", "put", "putting"),
    "shop": ("shops", "shopped", "shopped", "shopping"),
    "stop": ("stops", "stopped", "stopped", "stopping"),
    "plan": ("plans", "planned", "planned", "planning"),
    "get up": ("gets up", "got up", "got up", "getting up"),
}


def inflect(base: str) -> tuple[str, str, str, str]:
    """(3rd person singular, past, past participle, -ing) of an English verb."""
    if base in _IRREGULAR:
        return _IRREGULAR[base]
    if base.endswith(("s", "sh", "ch", "x", "o")):
        s3 = base + "es"
    elif base.endswith("y") and base[-2] not in "aeiou":
        s3 = base[:-1] + "ies"
    else:
        s3 = base + "s"
    if base.endswith("e"):
        past = base + "d"
    elif base.endswith("y") and base[-2] not in "aeiou":
        past = base[:-1] + "ied"
    else:
        past = base + "ed"
    ing = base[:-1] + "ing" if base.endswith("e") and not base.endswith("ee") else base + "ing"
    return s3, past, past, ing


def pluralize(word: str) -> str:
    if " of " in word:  # "cup of coffee" -> "cups of coffee"
        head, rest = word.split(" ", 1)
        return pluralize(head) + " " + rest
    if word.endswith(("s", "sh", "ch", "x")):
        return word + "es"
    if word.endswith("y") and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def article(word: str) -> str:
    return "an" if word[0].lower() in "aeiou" else "a"


# --------------------------------------------------------------------------------------------------
# Entries
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Person:
    en: str  # subject form, lower-case unless a name: "I", "my mother", "the teacher", "Tom"
    zh: str
    agr: str  # "1s", "2", "3s", "1p", "3p"
    obj: str = ""  # object form ("me"), defaults to en
    poss: str = ""  # possessive determiner ("my", "Tom's")
    zh_poss: str = ""  # Chinese possessive ("我的", "汤姆的")
    kind: str = "name"  # "pronoun", "kin", "role", "name"
    pron: str = ""  # independent possessive for comparisons ("mine")

    @property
    def key(self) -> str:
        return self.en

    @property
    def en_obj(self) -> str:
        return self.obj or self.en

    @property
    def en_poss(self) -> str:
        return self.poss or (self.en + "'s")

    @property
    def zh_of(self) -> str:
        return self.zh_poss or (self.zh + "的")


@dataclass(frozen=True)
class Noun:
    en: str  # singular: "book", "cup of coffee", "pair of shoes"
    zh: str
    mw: str  # measure word used with numbers and this/that
    tags: frozenset[str] = field(default_factory=frozenset)
    pl: str = ""  # plural ("books"), computed when empty
    mass: str = ""  # for "cup of coffee": "coffee"; for "pair of shoes": "shoes"

    @property
    def key(self) -> str:
        return self.en

    @property
    def plural(self) -> str:
        return self.pl or pluralize(self.en)

    @property
    def generic(self) -> str:
        """English generic form: "books", "coffee", "shoes"."""
        return self.mass or self.plural

    @property
    def is_container(self) -> bool:
        return " of " in self.en

    @property
    def generic_is_plural(self) -> bool:
        # "shoes", "glasses", "noodles" are plural; "coffee", "cake", "rice" are mass (singular)
        return not self.mass or self.mass.endswith("s")


@dataclass(frozen=True)
class Verb:
    """A transitive action verb and the noun tag it takes as object."""

    base: str
    zh: str
    obj: str  # noun tag
    durative: bool = True  # can be progressive (在V)
    experiential: bool = False  # used with 过 ("have read this book")

    @property
    def key(self) -> str:
        return f"{self.base}/{self.zh}"

    @property
    def forms(self) -> tuple[str, str, str, str]:
        return inflect(self.base)


@dataclass(frozen=True)
class PassiveVerb:
    """A verb in passive sentences: English participle and Chinese result verb ("broken" -> 打破)."""

    base: str
    zh: str
    obj: str  # noun tag

    @property
    def key(self) -> str:
        return f"{self.base}/{self.zh}"

    @property
    def pp(self) -> str:
        return inflect(self.base)[2]


@dataclass(frozen=True)
class Activity:
    """An intransitive verb phrase: "play basketball" -> 打篮球."""

    verb: str
    rest: str
    zh: str
    tags: frozenset[str] = field(default_factory=frozenset)
    hours: tuple[int, int] = (7, 21)  # plausible clock hours (24 h, inclusive)
    telic: bool = False  # "has already V-ed" -> 已经V了

    @property
    def key(self) -> str:
        return self.phrase("base")

    def phrase(self, form: str) -> str:
        s3, past, pp, ing = inflect(self.verb)
        head = {"base": self.verb, "s3": s3, "past": past, "pp": pp, "ing": ing}[form]
        return f"{head} {self.rest}".strip()


@dataclass(frozen=True)
class Adjective:
    en: str
    zh: str
    kind: str  # "obj", "person", "place", "weather", "color"
    tags: frozenset[str] = field(default_factory=frozenset)  # noun tags it fits (kind "obj")
    comp: str = ""  # comparative ("bigger"); empty: no comparative
    zh_comp: str = ""  # Chinese in comparisons when it differs ("older" -> 大)
    attr: str = ""  # attributive Chinese before a noun ("新", "红色的"); empty: not attributive
    mild: bool = False  # takes "a little" / "too"
    state: bool = False  # a temporary state of a person (takes a time: "was tired yesterday")

    @property
    def key(self) -> str:
        return f"{self.en}/{self.zh}"

    @property
    def zh_c(self) -> str:
        return self.zh_comp or self.zh


@dataclass(frozen=True)
class Place:
    en: str  # "the park", "Beijing", "home"
    zh: str
    prep: str = "in"  # "in the park", "at the station"
    tags: frozenset[str] = field(default_factory=frozenset)  # activities done there
    city: bool = False
    contains: frozenset[str] = field(default_factory=frozenset)  # nouns found inside (existence sentences)

    @property
    def key(self) -> str:
        return self.en

    @property
    def at(self) -> str:
        return f"{self.prep} {self.en}"


@dataclass(frozen=True)
class TimeExpr:
    en: str
    zh: str
    classes: frozenset[str]  # "past", "fut", "hab", "pres"
    day: bool = False  # a single day that takes a clock time ("tomorrow at 3 p.m.")

    @property
    def key(self) -> str:
        return self.en


@dataclass(frozen=True)
class Word:
    """A simple pair with a category (languages, roles, events, transport, locations, ...)."""

    en: str
    zh: str
    cat: str
    extra: str = ""

    @property
    def key(self) -> str:
        return self.en


def _t(*tags: str) -> frozenset[str]:
    return frozenset(tags)


# --------------------------------------------------------------------------------------------------
# People
# --------------------------------------------------------------------------------------------------

PRONOUNS = [
    Person("I", "我", "1s", "me", "my", "我的", "pronoun", "mine"),
    Person("you", "你", "2", "you", "your", "你的", "pronoun", "yours"),
    Person("he", "他", "3s", "him", "his", "他的", "pronoun", "his"),
    Person("she", "她", "3s", "her", "her", "她的", "pronoun", "hers"),
    Person("we", "我们", "1p", "us", "our", "我们的", "pronoun", "ours"),
    Person("they", "他们", "3p", "them", "their", "他们的", "pronoun", "theirs"),
]

KIN = [
    Person("my mother", "我妈妈", "3s", kind="kin"),
    Person("my father", "我爸爸", "3s", kind="kin"),
    Person("my older brother", "我哥哥", "3s", kind="kin"),
    Person("my older sister", "我姐姐", "3s", kind="kin"),
    Person("my younger brother", "我弟弟", "3s", kind="kin"),
    Person("my younger sister", "我妹妹", "3s", kind="kin"),
    Person("my grandmother", "我奶奶", "3s", kind="kin"),
    Person("my grandfather", "我爷爷", "3s", kind="kin"),
    Person("my friend", "我的朋友", "3s", kind="kin"),
    Person("my wife", "我妻子", "3s", kind="kin"),
    Person("my husband", "我丈夫", "3s", kind="kin"),
    Person("my son", "我儿子", "3s", kind="kin"),
    Person("my daughter", "我女儿", "3s", kind="kin"),
    Person("my parents", "我父母", "3p", kind="kin"),
    Person("my classmate", "我的同学", "3s", kind="kin"),
    Person("my colleague", "我的同事", "3s", kind="kin"),
    Person("my neighbor", "我的邻居", "3s", kind="kin"),
    Person("your mother", "你妈妈", "3s", kind="kin"),
    Person("your father", "你爸爸", "3s", kind="kin"),
    Person("his younger sister", "他妹妹", "3s", kind="kin"),
    Person("her younger brother", "她弟弟", "3s", kind="kin"),
    Person("our teacher", "我们老师", "3s", kind="kin"),
]

ROLES_AS_PEOPLE = [
    Person("the teacher", "老师", "3s", kind="role"),
    Person("the doctor", "医生", "3s", kind="role"),
    Person("the nurse", "护士", "3s", kind="role"),
    Person("the manager", "经理", "3s", kind="role"),
    Person("the driver", "司机", "3s", kind="role"),
    Person("the waiter", "服务员", "3s", kind="role"),
    Person("the engineer", "工程师", "3s", kind="role"),
    Person("the students", "学生们", "3p", kind="role"),
    Person("the children", "孩子们", "3p", kind="role"),
    Person("the tourists", "游客们", "3p", kind="role"),
]

NAMES = [
    Person(en, zh, "3s")
    for en, zh in [
        ("Tom", "汤姆"),
        ("Mary", "玛丽"),
        ("John", "约翰"),
        ("Lucy", "露西"),
        ("Lily", "莉莉"),
        ("Jack", "杰克"),
        ("Anna", "安娜"),
        ("David", "大卫"),
        ("Peter", "彼得"),
        ("Emma", "艾玛"),
        ("Mike", "迈克"),
        ("Linda", "琳达"),
        ("Sarah", "莎拉"),
        ("Kevin", "凯文"),
        ("Alice", "爱丽丝"),
        ("Kate", "凯特"),
        ("Susan", "苏珊"),
        ("Paul", "保罗"),
        ("Li Lei", "李雷"),
        ("Wang Fang", "王芳"),
        ("Zhang Wei", "张伟"),
        ("Liu Yang", "刘洋"),
        ("Chen Jing", "陈静"),
        ("Zhao Lei", "赵磊"),
        ("Xiao Ming", "小明"),
        ("Mr. Wang", "王先生"),
        ("Ms. Li", "李女士"),
        ("Dr. Chen", "陈医生"),
        ("Professor Zhang", "张教授"),
    ]
]

PEOPLE = PRONOUNS + KIN + ROLES_AS_PEOPLE + NAMES
PEOPLE_BY_KEY = {p.key: p for p in PEOPLE}

# --------------------------------------------------------------------------------------------------
# Nouns (tags say which verbs, adjectives, places they go with)
# --------------------------------------------------------------------------------------------------

NOUNS = [
    # reading and writing
    Noun("book", "书", "本", _t("read", "buy", "hold", "borrow", "sell", "lose", "take", "heavy", "content", "thing")),
    Noun("magazine", "杂志", "本", _t("read", "buy", "borrow", "content", "thing")),
    Noun("newspaper", "报纸", "份", _t("read", "buy", "thing")),
    Noun("dictionary", "词典", "本", _t("buy", "borrow", "lose", "use", "take", "heavy", "thing")),
    Noun("notebook", "笔记本", "个", _t("buy", "lose", "hold", "take", "thing")),
    Noun("pen", "笔", "支", _t("buy", "borrow", "lose", "hold", "use", "take", "thing", "color")),
    Noun("pencil", "铅笔", "支", _t("buy", "borrow", "lose", "take", "thing")),
    Noun("letter", "信", "封", _t("read", "write", "mail", "hold", "long")),
    Noun("email", "邮件", "封", _t("read", "write", "email", "file", "long")),
    Noun("message", "消息", "条", _t("read", "email", "file")),
    Noun("report", "报告", "份", _t("read", "write", "long", "approve")),
    Noun("story", "故事", "个", _t("read", "write", "content", "long"), pl="stories"),
    Noun("poem", "诗", "首", _t("read", "write", "content")),
    Noun("song", "歌", "首", _t("song", "write", "content")),
    Noun("movie", "电影", "部", _t("watch", "content", "long")),
    Noun("picture", "画", "幅", _t("draw", "buy", "sell", "hang", "beauty")),
    Noun("photo", "照片", "张", _t("photo", "file", "hang", "beauty")),
    Noun("map", "地图", "张", _t("buy", "draw", "hold", "use", "hang", "take", "thing")),
    Noun("ticket", "票", "张", _t("buy", "sell", "lose", "hold", "find", "take")),
    # food
    Noun("apple", "苹果", "个", _t("eat", "buy", "wash", "sized", "food")),
    Noun("banana", "香蕉", "根", _t("eat", "buy", "food")),
    Noun("orange", "橙子", "个", _t("eat", "buy", "sized", "food")),
    Noun("pear", "梨", "个", _t("eat", "buy", "wash", "food")),
    Noun("watermelon", "西瓜", "个", _t("eat", "buy", "sized", "food", "heavy")),
    Noun("egg", "鸡蛋", "个", _t("eat", "buy", "food")),
    Noun("sandwich", "三明治", "个", _t("eat", "buy", "order", "food")),
    Noun("hamburger", "汉堡", "个", _t("eat", "order", "food")),
    Noun("piece of cake", "蛋糕", "块", _t("eat", "buy", "order", "food"), mass="cake"),
    Noun("bowl of rice", "米饭", "碗", _t("eat", "order", "food"), mass="rice"),
    Noun("bowl of noodles", "面条", "碗", _t("eat", "order", "food"), mass="noodles"),
    Noun("piece of bread", "面包", "片", _t("eat", "food"), mass="bread"),
    # drinks
    Noun("cup of coffee", "咖啡", "杯", _t("drink", "order", "buy", "hold", "drinkable"), mass="coffee"),
    Noun("cup of tea", "茶", "杯", _t("drink", "order", "buy", "drinkable"), mass="tea"),
    Noun("glass of milk", "牛奶", "杯", _t("drink", "order", "drinkable"), mass="milk"),
    Noun("glass of juice", "果汁", "杯", _t("drink", "order", "drinkable"), mass="juice"),
    Noun("bottle of water", "水", "瓶", _t("drink", "buy", "hold", "drinkable"), mass="water"),
    Noun("bottle of beer", "啤酒", "瓶", _t("drink", "buy", "order", "drinkable"), mass="beer"),
    Noun("glass of wine", "葡萄酒", "杯", _t("drink", "order", "drinkable"), mass="wine"),
    # clothes
    Noun("shirt", "衬衫", "件", _t("wear", "buy", "wash", "color", "clothes", "thing", "sell")),
    Noun("coat", "外套", "件", _t("wear", "buy", "color", "clothes", "thing", "long")),
    Noun("sweater", "毛衣", "件", _t("wear", "buy", "wash", "color", "clothes", "thing")),
    Noun("jacket", "夹克", "件", _t("wear", "buy", "color", "clothes", "thing")),
    Noun("dress", "裙子", "条", _t("wear", "buy", "color", "clothes", "thing", "long")),
    Noun("pair of shoes", "鞋", "双", _t("wear", "buy", "color", "clothes", "comfort"), mass="shoes"),
    Noun("pair of jeans", "牛仔裤", "条", _t("wear", "buy", "clothes"), mass="jeans"),
    Noun("pair of socks", "袜子", "双", _t("wear", "buy", "wash"), mass="socks"),
    Noun("hat", "帽子", "顶", _t("wear_on", "buy", "color", "clothes", "thing")),
    Noun("watch", "手表", "块", _t("wear_on", "buy", "lose", "steal", "machine", "sell", "thing", "find")),
    Noun("pair of glasses", "眼镜", "副", _t("wear_on", "buy", "lose", "find"), mass="glasses"),
    Noun("scarf", "围巾", "条", _t("wear_on", "buy", "color", "clothes", "thing", "long"), pl="scarves"),
    # things one carries
    Noun("umbrella", "伞", "把", _t("hold", "buy", "lose", "borrow", "color", "take", "thing")),
    Noun("key", "钥匙", "把", _t("hold", "lose", "find", "take", "thing")),
    Noun("phone", "手机", "部", _t("buy", "lose", "steal", "machine", "use", "sell", "hold", "find", "thing")),
    Noun("computer", "电脑", "台", _t("buy", "machine", "use", "sell", "steal", "heavy", "fast", "thing")),
    Noun("camera", "相机", "台", _t("buy", "lose", "steal", "machine", "use", "hold", "thing")),
    Noun("TV", "电视", "台", _t("buy", "machine", "sized", "thing", "switch"), pl="TVs"),
    Noun("lamp", "灯", "盏", _t("buy", "machine", "thing", "switch")),
    Noun("bag", "包", "个", _t("buy", "hold", "lose", "steal", "color", "sized", "heavy", "thing", "find")),
    Noun("wallet", "钱包", "个", _t("buy", "lose", "steal", "find", "thing")),
    Noun("passport", "护照", "本", _t("lose", "find", "steal")),
    Noun("box", "盒子", "个", _t("hold", "sized", "heavy")),
    Noun("gift", "礼物", "份", _t("buy", "mail", "give", "beauty")),
    Noun("package", "包裹", "个", _t("mail", "heavy")),
    Noun("bunch of flowers", "花", "束", _t("buy", "hold", "give", "beauty"), mass="flowers"),
    # vehicles, houses, furniture
    Noun(
        "car",
        "车",
        "辆",
        _t("buy", "sell", "steal", "machine", "wash", "color", "sized", "fast", "thing", "lock", "dirt"),
    ),
    Noun("bicycle", "自行车", "辆", _t("buy", "sell", "steal", "machine", "borrow", "color", "fast", "thing")),
    Noun("motorcycle", "摩托车", "辆", _t("buy", "sell", "steal", "fast", "thing")),
    Noun("house", "房子", "套", _t("buy", "sell", "sized", "thing", "room", "dirt")),
    Noun("room", "房间", "个", _t("room", "sized", "dirt")),
    Noun("table", "桌子", "张", _t("buy", "furniture", "sized", "dirt")),
    Noun("chair", "椅子", "把", _t("buy", "furniture", "comfort", "machine")),
    Noun("desk", "书桌", "张", _t("buy", "furniture", "sized")),
    Noun("bed", "床", "张", _t("buy", "furniture", "comfort", "sized")),
    Noun("sofa", "沙发", "张", _t("buy", "furniture", "comfort", "sized", "color")),
    Noun("door", "门", "扇", _t("openable", "lock", "color")),
    Noun("window", "窗户", "扇", _t("openable", "breakable", "dirt")),
    Noun("cup", "杯子", "个", _t("breakable", "buy", "wash", "dirt")),
    Noun("vase", "花瓶", "个", _t("breakable", "buy", "beauty")),
    Noun("mirror", "镜子", "面", _t("breakable", "buy", "hang")),
    Noun("plate", "盘子", "个", _t("breakable", "wash")),
    Noun("file", "文件", "个", _t("file")),
    # animals and plants
    Noun("dog", "狗", "只", _t("pet", "find", "sized", "animal")),
    Noun("cat", "猫", "只", _t("pet", "find", "animal")),
    Noun("bird", "鸟", "只", _t("pet", "animal")),
    Noun("fish", "鱼", "条", _t("pet", "animal"), pl="fish"),
    Noun("rabbit", "兔子", "只", _t("pet", "animal")),
    Noun("horse", "马", "匹", _t("animal")),
    Noun("cow", "牛", "头", _t("animal")),
    Noun("duck", "鸭子", "只", _t("animal")),
    Noun("tree", "树", "棵", _t("plant")),
    # people counted with measure words (existence sentences)
    Noun("student", "学生", "个", _t("people")),
    Noun("child", "孩子", "个", _t("people"), pl="children"),
    Noun("tourist", "游客", "个", _t("people")),
    Noun("customer", "顾客", "个", _t("people")),
    Noun("person", "人", "个", _t("people"), pl="people"),
    Noun("nurse", "护士", "个", _t("people")),
]
NOUNS_BY_KEY = {n.key: n for n in NOUNS}


def nouns_with(tag: str) -> list[Noun]:
    return [n for n in NOUNS if tag in n.tags]


# --------------------------------------------------------------------------------------------------
# Verbs
# --------------------------------------------------------------------------------------------------

VERBS = [
    Verb("buy", "买", "buy"),
    Verb("sell", "卖", "sell"),
    Verb("read", "看", "read", experiential=True),
    Verb("write", "写", "write"),
    Verb("watch", "看", "watch", experiential=True),
    Verb("eat", "吃", "eat", experiential=True),
    Verb("drink", "喝", "drink", experiential=True),
    Verb("order", "点", "order", durative=False),
    Verb("find", "找到", "find", durative=False),
    Verb("lose", "丢", "lose", durative=False),
    Verb("bring", "带", "take", durative=False),
    Verb("borrow", "借", "borrow", durative=False),
    Verb("send", "寄", "mail", durative=False),
    Verb("send", "发", "email", durative=False),
    Verb("wash", "洗", "wash"),
    Verb("clean", "打扫", "room"),
    Verb("repair", "修", "machine", experiential=True),
    Verb("open", "打开", "openable", durative=False),
    Verb("close", "关上", "openable", durative=False),
    Verb("sing", "唱", "song", experiential=True),
    Verb("draw", "画", "draw"),
    Verb("take", "拍", "photo"),
    Verb("use", "用", "use", durative=False, experiential=True),
    Verb("delete", "删除", "file", durative=False),
]
VERBS_BY_KEY = {v.key: v for v in VERBS}

PASSIVE_VERBS = [
    PassiveVerb("break", "打破", "breakable"),
    PassiveVerb("steal", "偷走", "steal"),
    PassiveVerb("eat", "吃掉", "food"),
    PassiveVerb("take", "拿走", "take"),
    PassiveVerb("repair", "修好", "machine"),
    PassiveVerb("sell", "卖掉", "sell"),
    PassiveVerb("find", "找到", "find"),
    PassiveVerb("open", "打开", "openable"),
    PassiveVerb("lock", "锁上", "lock"),
    PassiveVerb("wash", "洗干净", "wash"),
    PassiveVerb("clean", "打扫干净", "room"),
    PassiveVerb("send", "寄出", "mail"),
    PassiveVerb("send", "发出", "email"),
    PassiveVerb("delete", "删除", "file"),
    PassiveVerb("borrow", "借走", "borrow"),
    PassiveVerb("approve", "批准", "approve"),
]
PASSIVE_BY_KEY = {v.key: v for v in PASSIVE_VERBS}

# Verbs of events and plans in the perfect passive ("The meeting has been postponed." -> 会议已被推迟。)
EVENTS = [
    Word("meeting", "会议", "event"),
    Word("class", "课", "event"),
    Word("concert", "音乐会", "event"),
    Word("game", "比赛", "event"),
    Word("party", "聚会", "event"),
    Word("trip", "旅行", "event"),
    Word("exam", "考试", "event"),
    Word("flight", "航班", "event"),
    Word("wedding", "婚礼", "event"),
    Word("interview", "面试", "event"),
    Word("plan", "计划", "plan"),
    Word("application", "申请", "plan"),
    Word("proposal", "提案", "plan"),
    Word("request", "请求", "plan"),
]
EVENTS_BY_KEY = {e.key: e for e in EVENTS}
HELD_EVENTS = ["meeting", "concert", "game", "party", "wedding", "exam"]  # "will be held on ..."
EVENT_VERBS = {
    "event": [Word("postponed", "推迟", "pp"), Word("cancelled", "取消", "pp")],
    "plan": [Word("approved", "批准", "pp"), Word("rejected", "拒绝", "pp")],
}

# --------------------------------------------------------------------------------------------------
# Activities (intransitive verb phrases)
# --------------------------------------------------------------------------------------------------

ACTIVITIES = [
    Activity("swim", "", "游泳", _t("swim", "fun"), (7, 20)),
    Activity("run", "", "跑步", _t("run", "fun", "exercise"), (6, 20)),
    Activity("sleep", "", "睡觉", _t("rest"), (21, 23)),
    Activity("work", "", "工作", _t("work"), (8, 18)),
    Activity("study", "", "学习", _t("study"), (8, 22)),
    Activity("cook", "", "做饭", _t("cook"), (11, 19)),
    Activity("sing", "", "唱歌", _t("music", "fun"), (10, 22)),
    Activity("dance", "", "跳舞", _t("music", "fun"), (18, 22)),
    Activity("rest", "", "休息", _t("rest"), (12, 22)),
    Activity("exercise", "", "锻炼", _t("exercise"), (6, 20)),
    Activity("drive", "", "开车", _t("drive"), (7, 20)),
    Activity("draw", "", "画画", _t("draw", "fun"), (9, 20)),
    Activity("play", "basketball", "打篮球", _t("play", "fun", "exercise"), (9, 20)),
    Activity("play", "football", "踢足球", _t("play", "fun", "exercise"), (9, 20)),
    Activity("play", "tennis", "打网球", _t("play", "fun", "exercise"), (9, 20)),
    Activity("play", "chess", "下棋", _t("fun", "rest"), (9, 21)),
    Activity("play", "the piano", "弹钢琴", _t("music", "fun"), (9, 21)),
    Activity("play", "the guitar", "弹吉他", _t("music", "fun"), (9, 22)),
    Activity("read", "books", "看书", _t("read"), (8, 22)),
    Activity("read", "the newspaper", "看报纸", _t("read"), (7, 21)),
    Activity("watch", "TV", "看电视", _t("watch", "rest", "fun"), (18, 23)),
    Activity("watch", "movies", "看电影", _t("cinema", "fun"), (14, 22)),
    Activity("listen", "to music", "听音乐", _t("music", "rest", "fun"), (9, 23)),
    Activity("do", "homework", "做作业", _t("study"), (16, 22)),
    Activity("take", "a walk", "散步", _t("walk", "fun"), (7, 21)),
    Activity("take", "photos", "拍照", _t("photo", "fun"), (9, 18)),
    Activity("take", "a shower", "洗澡", _t("home"), (6, 23)),
    Activity("write", "letters", "写信", _t("write"), (9, 21)),
    Activity("drink", "coffee", "喝咖啡", _t("cafe"), (7, 17)),
    Activity("drink", "tea", "喝茶", _t("cafe", "rest"), (8, 20)),
    Activity("wash", "the dishes", "洗碗", _t("cook"), (12, 21)),
    Activity("clean", "the room", "打扫房间", _t("home"), (9, 20)),
    Activity("wash", "clothes", "洗衣服", _t("home"), (9, 20)),
    Activity("have", "breakfast", "吃早饭", _t("eat"), (6, 9), telic=True),
    Activity("have", "lunch", "吃午饭", _t("eat"), (11, 13), telic=True),
    Activity("have", "dinner", "吃晚饭", _t("eat"), (17, 20), telic=True),
    Activity("get up", "", "起床", _t("daily"), (6, 9), telic=True),
    Activity("go", "to bed", "睡觉", _t("daily"), (21, 23), telic=True),
    Activity("go", "home", "回家", _t("daily"), (16, 22), telic=True),
    Activity("go", "to work", "上班", _t("daily"), (7, 9), telic=True),
    Activity("go", "to school", "上学", _t("daily"), (7, 8), telic=True),
    Activity("leave", "", "走", _t("daily"), (8, 22), telic=True),
    Activity("wait", "for the bus", "等公交车", _t("wait"), (7, 20)),
    Activity("go", "shopping", "逛街", _t("fun"), (10, 20)),
    Activity("go", "fishing", "钓鱼", _t("fun"), (6, 17)),
    Activity("go", "hiking", "爬山", _t("fun"), (7, 15)),
]
ACTIVITIES_BY_KEY = {a.key: a for a in ACTIVITIES}

# --------------------------------------------------------------------------------------------------
# Adjectives
# --------------------------------------------------------------------------------------------------

ADJECTIVES = [
    # things
    Adjective("expensive", "贵", "obj", _t("buy", "sell"), "more expensive"),
    Adjective("cheap", "便宜", "obj", _t("buy", "sell"), "cheaper"),
    Adjective("new", "新", "obj", _t("thing"), "newer", attr="新"),
    Adjective("old", "旧", "obj", _t("thing"), "older", attr="旧"),
    Adjective("big", "大", "obj", _t("sized"), "bigger", attr="大"),
    Adjective("small", "小", "obj", _t("sized"), "smaller", attr="小"),
    Adjective("heavy", "重", "obj", _t("heavy"), "heavier", mild=True),
    Adjective("light", "轻", "obj", _t("heavy"), "lighter"),
    Adjective("long", "长", "obj", _t("long"), "longer", mild=True),
    Adjective("short", "短", "obj", _t("long"), "shorter"),
    Adjective("interesting", "有意思", "obj", _t("content"), "more interesting", attr="有意思的"),
    Adjective("boring", "无聊", "obj", _t("content"), "more boring", mild=True),
    Adjective("beautiful", "漂亮", "obj", _t("beauty", "clothes"), "more beautiful", attr="漂亮的"),
    Adjective("clean", "干净", "obj", _t("dirt"), "cleaner"),
    Adjective("dirty", "脏", "obj", _t("dirt"), "dirtier", mild=True),
    Adjective("delicious", "好吃", "obj", _t("food"), "more delicious"),
    Adjective("delicious", "好喝", "obj", _t("drinkable"), "more delicious"),
    Adjective("fast", "快", "obj", _t("fast"), "faster"),
    Adjective("slow", "慢", "obj", _t("fast"), "slower", mild=True),
    Adjective("comfortable", "舒服", "obj", _t("comfort"), "more comfortable"),
    # people
    Adjective("tall", "高", "person", comp="taller"),
    Adjective("short", "矮", "person", comp="shorter"),
    Adjective("young", "年轻", "person", comp="younger", zh_comp="小"),
    Adjective("old", "老", "person", comp="older", zh_comp="大"),
    Adjective("busy", "忙", "person", comp="busier", mild=True, state=True),
    Adjective("tired", "累", "person", mild=True, state=True),
    Adjective("happy", "高兴", "person", comp="happier", state=True),
    Adjective("sad", "难过", "person", mild=True, state=True),
    Adjective("hungry", "饿", "person", mild=True, state=True),
    Adjective("thirsty", "渴", "person", mild=True, state=True),
    Adjective("nervous", "紧张", "person", mild=True, state=True),
    Adjective("excited", "兴奋", "person", state=True),
    Adjective("angry", "生气", "person", mild=True, state=True),
    Adjective("kind", "善良", "person", comp="kinder"),
    Adjective("friendly", "友好", "person", comp="friendlier"),
    Adjective("smart", "聪明", "person", comp="smarter"),
    Adjective("strong", "强壮", "person", comp="stronger"),
    Adjective("thin", "瘦", "person", comp="thinner", mild=True),
    Adjective("famous", "有名", "person", comp="more famous"),
    Adjective("rich", "有钱", "person", comp="richer"),
    Adjective("healthy", "健康", "person", comp="healthier"),
    Adjective("polite", "有礼貌", "person", comp="more polite"),
    Adjective("honest", "诚实", "person", comp="more honest"),
    # places
    Adjective("big", "大", "place", comp="bigger"),
    Adjective("small", "小", "place", comp="smaller"),
    Adjective("beautiful", "美", "place", comp="more beautiful"),
    Adjective("clean", "干净", "place", comp="cleaner"),
    Adjective("quiet", "安静", "place", comp="quieter"),
    Adjective("noisy", "吵", "place", comp="noisier", mild=True),
    Adjective("far", "远", "place", comp="farther", mild=True),
    Adjective("old", "古老", "place", comp="older"),
    # weather (also cities in a season)
    Adjective("nice", "好", "weather"),
    Adjective("hot", "热", "weather", comp="hotter", mild=True),
    Adjective("cold", "冷", "weather", comp="colder", mild=True),
    Adjective("warm", "暖和", "weather", comp="warmer"),
    Adjective("cool", "凉快", "weather", comp="cooler"),
    Adjective("sunny", "晴朗", "weather"),
    Adjective("dry", "干燥", "weather", comp="drier", mild=True),
    Adjective("humid", "潮湿", "weather", comp="more humid", mild=True),
    # colors
    Adjective("red", "红色", "color", attr="红色的"),
    Adjective("blue", "蓝色", "color", attr="蓝色的"),
    Adjective("black", "黑色", "color", attr="黑色的"),
    Adjective("white", "白色", "color", attr="白色的"),
    Adjective("green", "绿色", "color", attr="绿色的"),
    Adjective("yellow", "黄色", "color", attr="黄色的"),
    Adjective("gray", "灰色", "color", attr="灰色的"),
    Adjective("brown", "棕色", "color", attr="棕色的"),
    Adjective("pink", "粉色", "color", attr="粉色的"),
    Adjective("purple", "紫色", "color", attr="紫色的"),
]
ADJECTIVES_BY_KEY = {a.key: a for a in ADJECTIVES}


def adjectives(kind: str) -> list[Adjective]:
    return [a for a in ADJECTIVES if a.kind == kind]


def adjectives_for(noun: Noun) -> list[Adjective]:
    return [a for a in ADJECTIVES if a.kind == "obj" and a.tags & noun.tags]


# --------------------------------------------------------------------------------------------------
# Places
# --------------------------------------------------------------------------------------------------

PLACES = [
    Place(
        "the park",
        "公园",
        "in",
        _t("walk", "run", "read", "photo", "exercise", "draw", "play", "music"),
        contains=_t("tree", "dog", "bird", "child", "tourist", "person"),
    ),
    Place(
        "the library",
        "图书馆",
        "in",
        _t("read", "study", "write"),
        contains=_t("book", "student", "computer", "magazine", "desk", "person"),
    ),
    Place("the school", "学校", "at", _t("study", "play", "work"), contains=_t("student", "tree", "computer")),
    Place(
        "the classroom",
        "教室",
        "in",
        _t("study", "read", "write"),
        contains=_t("student", "desk", "chair", "computer", "child"),
    ),
    Place(
        "the office",
        "办公室",
        "in",
        _t("work", "write", "cafe"),
        contains=_t("computer", "desk", "chair", "person", "lamp"),
    ),
    Place("home", "家", "at", _t("read", "study", "cook", "eat", "rest", "home", "watch", "music", "write", "cafe")),
    Place("the gym", "健身房", "at", _t("exercise", "run", "swim", "play"), contains=_t("person")),
    Place("the swimming pool", "游泳池", "at", _t("swim"), contains=_t("child", "person")),
    Place(
        "the beach", "海边", "at", _t("swim", "walk", "run", "photo", "rest", "play"), contains=_t("tourist", "child")
    ),
    Place(
        "the kitchen",
        "厨房",
        "in",
        _t("cook", "eat"),
        contains=_t("egg", "apple", "bottle of water", "cup", "plate", "table"),
    ),
    Place("the restaurant", "餐厅", "at", _t("eat", "work"), contains=_t("customer", "table", "chair")),
    Place("the cafe", "咖啡馆", "at", _t("read", "cafe", "write", "rest"), contains=_t("customer", "table", "chair")),
    Place(
        "the garden",
        "花园",
        "in",
        _t("read", "walk", "rest", "draw"),
        contains=_t("tree", "cat", "dog", "bird", "rabbit", "child"),
    ),
    Place("the hospital", "医院", "at", _t("work"), contains=_t("nurse", "person", "bed")),
    Place("the bank", "银行", "at", _t("work"), contains=_t("customer")),
    Place("the hotel", "酒店", "at", _t("rest", "work", "eat"), contains=_t("tourist", "room")),
    Place("the supermarket", "超市", "at", _t("work"), contains=_t("customer", "apple", "watermelon", "egg")),
    Place("the museum", "博物馆", "at", _t("photo", "draw"), contains=_t("tourist", "picture")),
    Place("the station", "车站", "at", _t("wait"), contains=_t("person", "tourist")),
    Place("the bus stop", "公交车站", "at", _t("wait"), contains=_t("person")),
    Place("the airport", "机场", "at", _t("wait", "work"), contains=_t("tourist", "person")),
    Place("the cinema", "电影院", "at", _t("cinema"), contains=_t("person")),
    Place("the playground", "操场", "on", _t("play", "run", "exercise"), contains=_t("child", "student")),
    Place(
        "the living room",
        "客厅",
        "in",
        _t("watch", "rest", "read", "music"),
        contains=_t("sofa", "TV", "lamp", "chair", "picture"),
    ),
    Place("the bedroom", "卧室", "in", _t("rest", "read", "study"), contains=_t("bed", "desk", "lamp", "chair")),
    Place("the farm", "农场", "on", _t("work"), contains=_t("horse", "cow", "duck", "dog", "tree")),
    Place("the parking lot", "停车场", "in", _t(), contains=_t("car", "bicycle", "motorcycle")),
    Place("the bookstore", "书店", "at", _t("read"), contains=_t("book", "magazine", "customer")),
    Place("the zoo", "动物园", "at", _t("photo", "walk"), contains=_t("bird", "rabbit", "tourist")),
    Place("the post office", "邮局", "at", _t("work"), contains=_t("person", "package")),
]
_COUNTRIES = {"China", "Japan", "France", "Germany", "Canada", "Australia", "Italy", "Spain"}
CITIES = [
    Place(en, zh, "in", _t("work", "study", "live", "country" if en in _COUNTRIES else "city"), city=True)
    for en, zh in [
        ("Beijing", "北京"),
        ("Shanghai", "上海"),
        ("Guangzhou", "广州"),
        ("Shenzhen", "深圳"),
        ("Chengdu", "成都"),
        ("Hangzhou", "杭州"),
        ("Nanjing", "南京"),
        ("Wuhan", "武汉"),
        ("Hong Kong", "香港"),
        ("Tianjin", "天津"),
        ("London", "伦敦"),
        ("Paris", "巴黎"),
        ("Tokyo", "东京"),
        ("New York", "纽约"),
        ("Sydney", "悉尼"),
        ("Berlin", "柏林"),
        ("Rome", "罗马"),
        ("Singapore", "新加坡"),
        ("Moscow", "莫斯科"),
        ("Seoul", "首尔"),
        ("Toronto", "多伦多"),
        ("Madrid", "马德里"),
        ("China", "中国"),
        ("Japan", "日本"),
        ("France", "法国"),
        ("Germany", "德国"),
        ("Canada", "加拿大"),
        ("Australia", "澳大利亚"),
        ("Italy", "意大利"),
        ("Spain", "西班牙"),
    ]
]
PLACES_BY_KEY = {p.key: p for p in PLACES + CITIES}
PLACES_WITH_CONTENTS = [p for p in PLACES if p.contains]
DESTINATIONS = [p for p in PLACES if p.en != "home"] + CITIES

# Where a thing is: "on the table" -> 桌子上
LOCATIONS = [
    Word("on the table", "桌子上", "loc"),
    Word("on the desk", "书桌上", "loc"),
    Word("on the shelf", "书架上", "loc"),
    Word("on the sofa", "沙发上", "loc"),
    Word("on the bed", "床上", "loc"),
    Word("on the floor", "地上", "loc"),
    Word("in the bag", "包里", "loc"),
    Word("in the box", "盒子里", "loc"),
    Word("in the drawer", "抽屉里", "loc"),
    Word("in the car", "车里", "loc"),
    Word("under the bed", "床下面", "loc"),
    Word("under the table", "桌子下面", "loc"),
    Word("behind the door", "门后面", "loc"),
    Word("next to the window", "窗户旁边", "loc"),
    Word("in front of the house", "房子前面", "loc"),
]
LOCATIONS_BY_KEY = {w.key: w for w in LOCATIONS}
SMALL_THINGS = [
    "book",
    "magazine",
    "dictionary",
    "notebook",
    "pen",
    "pencil",
    "letter",
    "map",
    "ticket",
    "apple",
    "orange",
    "umbrella",
    "key",
    "phone",
    "camera",
    "bag",
    "wallet",
    "passport",
    "box",
    "gift",
    "hat",
    "watch",
    "pair of glasses",
    "pair of shoes",
    "cup",
    "cat",
    "dog",
    "newspaper",
    "bunch of flowers",
]

# --------------------------------------------------------------------------------------------------
# Time
# --------------------------------------------------------------------------------------------------

_P, _F, _H, _N = "past", "fut", "hab", "pres"

TIMES = [
    TimeExpr("today", "今天", _t(_N, _F), day=True),
    TimeExpr("now", "现在", _t(_N)),
    TimeExpr("yesterday", "昨天", _t(_P), day=True),
    TimeExpr("last night", "昨天晚上", _t(_P)),
    TimeExpr("yesterday morning", "昨天早上", _t(_P)),
    TimeExpr("yesterday afternoon", "昨天下午", _t(_P)),
    TimeExpr("the day before yesterday", "前天", _t(_P), day=True),
    TimeExpr("last week", "上周", _t(_P)),
    TimeExpr("last month", "上个月", _t(_P)),
    TimeExpr("last year", "去年", _t(_P)),
    TimeExpr("last weekend", "上个周末", _t(_P)),
    TimeExpr("this morning", "今天早上", _t(_P)),
    TimeExpr("tomorrow", "明天", _t(_F), day=True),
    TimeExpr("tomorrow morning", "明天早上", _t(_F)),
    TimeExpr("tomorrow afternoon", "明天下午", _t(_F)),
    TimeExpr("tomorrow evening", "明天晚上", _t(_F)),
    TimeExpr("tonight", "今天晚上", _t(_F)),
    TimeExpr("this afternoon", "今天下午", _t(_F)),
    TimeExpr("the day after tomorrow", "后天", _t(_F), day=True),
    TimeExpr("next week", "下周", _t(_F)),
    TimeExpr("next month", "下个月", _t(_F)),
    TimeExpr("next year", "明年", _t(_F)),
    TimeExpr("this weekend", "这个周末", _t(_F)),
    TimeExpr("next weekend", "下个周末", _t(_F)),
    TimeExpr("every day", "每天", _t(_H), day=True),
    TimeExpr("every morning", "每天早上", _t(_H)),
    TimeExpr("every evening", "每天晚上", _t(_H)),
    TimeExpr("every week", "每周", _t(_H)),
    TimeExpr("every weekend", "每个周末", _t(_H)),
    TimeExpr("every month", "每个月", _t(_H)),
]
WEEKDAYS = [
    ("Monday", "星期一"),
    ("Tuesday", "星期二"),
    ("Wednesday", "星期三"),
    ("Thursday", "星期四"),
    ("Friday", "星期五"),
    ("Saturday", "星期六"),
    ("Sunday", "星期天"),
]
for _en, _zh in WEEKDAYS:
    TIMES.append(TimeExpr(f"last {_en}", f"上{_zh}", _t(_P), day=True))
    TIMES.append(TimeExpr(f"next {_en}", f"下{_zh}", _t(_F), day=True))
    TIMES.append(TimeExpr(f"on {_en}", _zh, _t(_F), day=True))
    TIMES.append(TimeExpr(f"every {_en}", f"每个{_zh}", _t(_H), day=True))
TIMES_BY_KEY = {t.key: t for t in TIMES}


def times(cls: str, *, day: bool = False) -> list[TimeExpr]:
    return [t for t in TIMES if cls in t.classes and (t.day or not day)]


SEASONS = [
    Word("spring", "春天", "season"),
    Word("summer", "夏天", "season"),
    Word("autumn", "秋天", "season"),
    Word("winter", "冬天", "season"),
]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
ADVERBS = [
    Word("often", "经常", "freq"),
    Word("usually", "通常", "freq"),
    Word("always", "总是", "freq"),
    Word("sometimes", "有时候", "freq"),
]
# units of duration: English singular, plural, Chinese unit after the number
DURATIONS = [
    Word("minute", "分钟", "dur", "minutes"),
    Word("hour", "个小时", "dur", "hours"),
    Word("day", "天", "dur", "days"),
    Word("week", "个星期", "dur", "weeks"),
    Word("month", "个月", "dur", "months"),
    Word("year", "年", "dur", "years"),
]
DURATIONS_BY_KEY = {d.key: d for d in DURATIONS}

# --------------------------------------------------------------------------------------------------
# Other words
# --------------------------------------------------------------------------------------------------

LANGUAGES = [
    Word(en, zh, "lang")
    for en, zh in [
        ("Chinese", "中文"),
        ("English", "英语"),
        ("French", "法语"),
        ("Japanese", "日语"),
        ("German", "德语"),
        ("Spanish", "西班牙语"),
        ("Korean", "韩语"),
        ("Russian", "俄语"),
        ("Italian", "意大利语"),
        ("Arabic", "阿拉伯语"),
    ]
]
LANGUAGES_BY_KEY = {w.key: w for w in LANGUAGES}

PROFESSIONS = [
    Word(en, zh, "job", pl)
    for en, zh, pl in [
        ("teacher", "老师", "teachers"),
        ("doctor", "医生", "doctors"),
        ("nurse", "护士", "nurses"),
        ("student", "学生", "students"),
        ("engineer", "工程师", "engineers"),
        ("lawyer", "律师", "lawyers"),
        ("driver", "司机", "drivers"),
        ("cook", "厨师", "cooks"),
        ("farmer", "农民", "farmers"),
        ("writer", "作家", "writers"),
        ("singer", "歌手", "singers"),
        ("police officer", "警察", "police officers"),
        ("programmer", "程序员", "programmers"),
        ("accountant", "会计", "accountants"),
        ("artist", "艺术家", "artists"),
        ("scientist", "科学家", "scientists"),
        ("journalist", "记者", "journalists"),
        ("pilot", "飞行员", "pilots"),
        ("dentist", "牙医", "dentists"),
        ("waiter", "服务员", "waiters"),
    ]
]
PROFESSIONS_BY_KEY = {w.key: w for w in PROFESSIONS}

TRANSPORT = [
    Word("by bus", "坐公交车", "by"),
    Word("by train", "坐火车", "by"),
    Word("by plane", "坐飞机", "by"),
    Word("by car", "开车", "by"),
    Word("by bike", "骑自行车", "by"),
    Word("by subway", "坐地铁", "by"),
    Word("by taxi", "坐出租车", "by"),
    Word("by boat", "坐船", "by"),
    Word("on foot", "走路", "by"),
]
TRANSPORT_BY_KEY = {w.key: w for w in TRANSPORT}
LOCAL_TRANSPORT = ["by bus", "by car", "by bike", "by subway", "by taxi", "on foot"]

VEHICLES = [
    Word("train", "火车", "vehicle"),
    Word("bus", "公交车", "vehicle"),
    Word("plane", "飞机", "vehicle"),
    Word("ship", "船", "vehicle"),
    Word("flight", "航班", "vehicle"),
]
VEHICLES_BY_KEY = {w.key: w for w in VEHICLES}

SWITCHABLE = [
    Word("door", "门", "open"),
    Word("window", "窗户", "open"),
    Word("light", "灯", "switch"),
    Word("TV", "电视", "switch"),
    Word("computer", "电脑", "switch"),
]
SWITCHABLE_BY_KEY = {w.key: w for w in SWITCHABLE}

CURRENCIES = [
    Word("dollar", "美元", "money", "dollars"),
    Word("yuan", "元", "money", "yuan"),
    Word("euro", "欧元", "money", "euros"),
    Word("pound", "英镑", "money", "pounds"),
]
CURRENCIES_BY_KEY = {w.key: w for w in CURRENCIES}

# "I called Tom." -> 给汤姆打了电话: English verb, Chinese pattern ({o}: the person, {le}: 了 in the past)
PERSON_VERBS = [
    Word("call", "给{o}打{le}电话", "pv", "durative"),
    Word("meet", "见到{le}{o}", "pv"),
    Word("help", "帮助{le}{o}", "pv", "durative"),
    Word("visit", "看望{le}{o}", "pv"),
    Word("wait for", "等{le}{o}", "pv", "durative"),
    Word("email", "给{o}发{le}邮件", "pv"),
    Word("thank", "感谢{le}{o}", "pv"),
]
PERSON_VERBS_BY_KEY = {w.key: w for w in PERSON_VERBS}


def lexicon() -> dict[str, list[Any]]:
    """Every entry of the lexicon, by category (for counting and inspection)."""
    return {
        "people": list(PEOPLE),
        "nouns": list(NOUNS),
        "verbs": list(VERBS),
        "passive_verbs": list(PASSIVE_VERBS),
        "events": list(EVENTS),
        "activities": list(ACTIVITIES),
        "adjectives": list(ADJECTIVES),
        "places": list(PLACES) + list(CITIES),
        "locations": list(LOCATIONS),
        "times": list(TIMES),
        "seasons": list(SEASONS),
        "adverbs": list(ADVERBS),
        "durations": list(DURATIONS),
        "languages": list(LANGUAGES),
        "professions": list(PROFESSIONS),
        "transport": list(TRANSPORT),
        "vehicles": list(VEHICLES),
        "switchable": list(SWITCHABLE),
        "currencies": list(CURRENCIES),
        "person_verbs": list(PERSON_VERBS),
    }


def lexicon_size() -> int:
    return sum(len(v) for v in lexicon().values())
