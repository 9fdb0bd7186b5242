"""The small built-in lexicon of the rule-based extractor.

Chat is often typed in lower case ("i moved to berlin", "vscode + docker"), so capital
letters alone cannot find names. The lexicon holds well-known places, tools and companies
under their canonical spelling, a list of common first names, and the capitalised words
that are *not* names (greetings, days, pronouns, sentence starters). It is deliberately
small: a few hundred entries cover most everyday chat, and anything else is found by
capitalisation and the verb patterns in :mod:`nams_local.extraction.patterns`.

Entries in :data:`CASED` are ordinary English words as well ("Go", "Rust", "Spark",
"Notion"); they count only when written with a capital letter and not as the first word
of a sentence.
"""

from __future__ import annotations

from types import MappingProxyType

__all__ = [
    "CASED",
    "EVENT_WORDS",
    "FIRST_NAMES",
    "JOB_NOUNS",
    "KNOWN",
    "LOCATION_SUFFIXES",
    "NAME_CONNECTORS",
    "NOT_NAMES",
    "ORG_SUFFIXES",
    "PERSON_TITLES",
    "UPPER_ONLY",
    "words",
]


def words(text: str) -> frozenset[str]:
    """The whitespace-separated words of ``text``: how the word lists below are written."""
    return frozenset(text.split())


def _entries(kind: str, names: str) -> dict[str, tuple[str, str]]:
    """``{"lower case key": (canonical name, type)}`` from a ``|``-separated list.

    ``alias=Canonical`` spells a variant ("VSCode=VS Code"). A name written all in lower
    case ("tmux") gets a capital first letter: the meta-entity guard (§6.4) reads an
    all-lower-case name as a common noun and would drop it.
    """
    out: dict[str, tuple[str, str]] = {}
    for raw in names.split("|"):
        alias, _, canonical = raw.strip().partition("=")
        name = canonical or alias
        if not alias:
            continue
        if name == name.lower():
            name = name[0].upper() + name[1:]
        out[alias.lower()] = (name, kind)
    return out


_LOCATIONS = """
Amsterdam|Athens|Atlanta|Auckland|Austin|Bangalore|Bengaluru=Bangalore|Bangkok|Barcelona|Beijing|Berlin|
Bogota|Boston|Brisbane|Brussels|Budapest|Buenos Aires|Cairo|Calgary|Cape Town|Chennai|Chicago|
Copenhagen|Delhi|Denver|Dubai|Dublin|Edinburgh|Frankfurt|Geneva|Goa|Hamburg|Helsinki|
Ho Chi Minh City|Hong Kong|Hyderabad|Istanbul|Jakarta|Johannesburg|Kigali|Kolkata|Kuala Lumpur|
Kyoto|Lagos|Lima|Lisbon|London|Los Angeles|Lyon|Madrid|Manchester|Manila|Melbourne|
Mexico City|Miami|Milan|Montreal|Moscow|Mumbai|Munich|Mysore|Nairobi|Naples|New York|
NYC=New York|Osaka|Oslo|Ottawa|Paris|Perth|Philadelphia|Porto|Prague|Pune|Rome|San Diego|
San Francisco|
Santiago|Sao Paulo=São Paulo|São Paulo|Seattle|Seoul|Shanghai|Singapore|Stockholm|Sydney|Taipei|
Tel Aviv|Tokyo|Toronto|Vancouver|Vienna|Warsaw|Washington|Zurich|Zürich=Zurich|Canberra|Kathmandu|
Karachi|Lahore|Dhaka|Colombo|Accra|Addis Ababa|Casablanca|Tunis|Doha|Riyadh|Tehran|Valencia|
Seville|Florence|Venice|Munster|Cologne|Stuttgart|Dresden|Leipzig|Rotterdam|Antwerp|Krakow|
Australia|Austria|Belgium|Brazil|Canada|Chile|China|Colombia|Denmark|Egypt|England|Finland|
France|Germany|Ghana|Greece|India|Indonesia|Ireland|Israel|Italy|Japan|Kenya|Korea|
South Korea|Mexico|Morocco|Nepal|Netherlands|New Zealand|Nigeria|Norway|Pakistan|Peru|
Philippines|Poland|Portugal|Russia|Rwanda|Scotland|South Africa|Spain|Sri Lanka|Sweden|
Switzerland|Taiwan|Thailand|Ukraine|United Kingdom|UK=United Kingdom|United States|
USA=United States|US=United States|Vietnam|Wales|
Argentina|Bangladesh|Ethiopia|Tanzania|Uganda|Europe|Asia|Africa|North America|
South America|California|Texas|Bavaria|Karnataka|Kerala|Maharashtra|Ontario|Quebec|
Silicon Valley|Bay Area|Manhattan|Brooklyn
"""

_TOOLS = """
Python|JavaScript|TypeScript|Golang=Go|Java|Kotlin|Scala|Haskell|Elixir|Erlang|Clojure|Ruby|PHP|Perl|
C#|C++|Lua|R|Matlab|MATLAB|Fortran|COBOL|Dart|Zig|Nim|OCaml|F#|Bash|Zsh|Fish|
PowerShell|SQL|GraphQL|HTML|CSS|Sass|LaTeX|Markdown|
Neovim|Vim|Emacs|VS Code|VSCode=VS Code|Visual Studio|Visual Studio Code=VS Code|
Sublime Text|PyCharm|
IntelliJ|IntelliJ IDEA|WebStorm|Xcode|Android Studio|Eclipse|Jupyter|JupyterLab|tmux|
Git|GitHub|GitLab|Bitbucket|Docker|Docker Compose|Kubernetes|k8s=Kubernetes|Helm|Terraform|Ansible|
Podman|Vagrant|Jenkins|CircleCI|GitHub Actions|ArgoCD|Prometheus|Grafana|Datadog|Sentry|
PostgreSQL|Postgres|MySQL|MariaDB|SQLite|MongoDB|Redis|Cassandra|Elasticsearch|OpenSearch|
DynamoDB|Neo4j|Snowflake|BigQuery|Redshift|ClickHouse|DuckDB|Kafka|RabbitMQ|Airflow|dbt|
Databricks|Hadoop|Pandas|NumPy|SciPy|PyTorch|TensorFlow|Keras|scikit-learn|Jax|
React|Vue|Angular|Svelte|Next.js|Node.js|Node|Deno|Bun|Django|Flask|FastAPI|Rails|
Ruby on Rails|Laravel|Spring|Spring Boot|Express|SQLAlchemy|Alembic|Prisma|Hibernate|
PyO3|Pydantic|Celery|NGINX|Apache|Linux|Ubuntu|Debian|Fedora|Arch Linux|macOS|iOS|Android|
Windows|WSL|FreeBSD|AWS|EC2|S3|EKS|ECS|RDS|Lambda|GCP|Google Cloud|Azure|Heroku|Vercel|
Netlify|Cloudflare|DigitalOcean|Firebase|Supabase|Excel|Power BI|Power Query|Tableau|Looker|
Google Sheets|Google Docs|Google Meet|Google Drive|Gmail|Outlook|Microsoft Teams|Teams|Zoom|
Slack|Discord|WhatsApp|Telegram|Signal|Jira|Confluence|Trello|Asana|Notion|Obsidian|
Figma|Photoshop|Illustrator|Blender|Unity|Unreal Engine|Godot|Overleaf|ChatGPT|Claude|
Copilot|GitHub Copilot|Ollama|LangChain|ROS|ROS 2|Gazebo|Simulink|Arduino|Raspberry Pi|
iPhone|iPad|MacBook|Chrome|Firefox|Safari|Spotify|Netflix|Steam|Nomad|Consul|Vault|Helix|
Rust|Go|Swift|Julia|Spark|Flink|Pulsar
"""

_ORGANIZATIONS = """
Google|Alphabet|Microsoft|Apple|Amazon|Meta|Facebook|Netflix|IBM|Intel|AMD|Nvidia|NVIDIA|
Oracle|SAP|Salesforce|Adobe|Stripe|Shopify|Uber|Lyft|Airbnb|Twitter|LinkedIn|OpenAI|
Anthropic|DeepMind|Tesla|SpaceX|Samsung|Sony|Nintendo|Toyota|Honda|Siemens|Bosch|Infosys|
TCS|Wipro|Accenture|Deloitte|McKinsey|Goldman Sachs|JPMorgan|Morgan Stanley|Spotify AB|
Atlassian|GitHub Inc|Canonical|Red Hat|Mozilla|Cloudflare Inc|Safaricom|Flipkart|Swiggy|
Zomato|Ola|Paytm|Rakuten|Alibaba|Tencent|Baidu|ByteDance|TikTok|Huawei|Xiaomi|Booking.com|
Revolut|Monzo|Klarna|N26|Wise|Deutsche Bank|HSBC|Barclays|BBC|CNN|NASA|CERN|WHO|UN|
Neo4j Inc|MIT|Stanford|Harvard|Oxford|Cambridge|ETH Zurich|EPFL|TechCorp
"""

_EVENTS = """
PyCon|KubeCon|WWDC|Google I/O|Web Summit|CES|Christmas|Diwali|Eid|Hanukkah|Easter|
Thanksgiving|Ramadan|New Year|New Year's Eve|Halloween|Holi|Oktoberfest|Olympics|
World Cup|Super Bowl|Black Friday|Burning Man|Coachella|Glastonbury
"""

# Later groups win on key clashes: "Spotify" is the app, "Cloudflare" the service.
KNOWN: MappingProxyType[str, tuple[str, str]] = MappingProxyType(
    {
        **_entries("organization", _ORGANIZATIONS),
        **_entries("event", _EVENTS),
        **_entries("location", _LOCATIONS),
        **_entries("tool", _TOOLS),
    }
)

#: Keys (lower case) that are also everyday words: names only when capitalised mid-sentence.
CASED: frozenset[str] = words(
    """go rust swift julia spark flink pulsar unity steam nomad consul vault helix notion slack
    signal teams zoom express spring node bun fish r lambda apache chrome safari excel
    outlook discord apple amazon meta oracle wise ola claude copilot fedora arch eclipse
    react vue angular sass dart nim ruby rails perl lua bash windows obsidian helm blender
    sap canonical lima us who un mit ces eid holi word keras jax"""
)

#: Keys that are names only in capitals: "US" the country, not "us".
UPPER_ONLY: frozenset[str] = words("us un who mit ces sap")

#: Capitalised words that never start or form a name on their own.
NOT_NAMES: frozenset[str] = words(
    """i i'm im i've i'd i'll me my mine myself we we're our us you you're your yours he she
    it its they them their his her hers this that these those there here what which who whom
    whose when where why how a an the and or but if so then than also just only still yet
    hi hey hello hiya yo howdy hmm hm uh um oh ah ok okay yes yeah yep no nope nah sure
    thanks thank thx ty cheers please sorry welcome bye goodbye congrats congratulations
    great good nice cool awesome perfect fine wow lol haha btw fyi imo tbh np
    monday tuesday wednesday thursday friday saturday sunday today tomorrow yesterday tonight
    january february march april may june july august september october november december
    morning evening afternoon night weekend week month year
    can could would should will shall may might must do does did done is are was were be
    been being am have has had let lets let's maybe perhaps actually anyway also however
    is it's that's there's here's what's where's who's how's
    of for in on at to from by with about into over under after before between during
    remember remembered memory memories profile preferences preference notes note summary
    saved stored recall user assistant human ai bot agent model
    not don't can't won't isn't aren't doesn't didn't never none nothing something anything
    everything everyone someone anyone all any some every each both either neither
    last next first second new old big small long short high low best better worst
    one two three four five six seven eight nine ten
    mr mrs ms dr prof sir madam
    english spanish french german italian portuguese japanese chinese hindi indian american
    british european african asian canadian australian
    internet web email wifi api cli ui ux faq pdf csv json yaml xml http https url id ids
    cs dag ml ai llm os pm am ceo cto cfo vp hr qa
    got noted done sounds looks seems think know see let check try make take give tell
    ask said say says go going went come coming came get getting here's
    migrating setting self-hosted enjoy remember crisp quiet
    """
)

#: Common first names from many languages: a capitalised word here is a person.
FIRST_NAMES: frozenset[str] = words(
    """alex alexander alice amelia amy andrew anna anne ben benjamin bob carlos charlie chloe
    chris christina daniel david diana ed edward elena eli elizabeth emily emma eric eva
    fatima frank george grace hannah harry helen henry isabella jack jacob james jane jason
    jennifer jessica joe john jonathan joseph josh julia kate katie kevin laura leo lena
    liam lily lisa lucas lucy luca luke marco maria mark martin mary matt matthew max
    michael mike mohammed muhammad nina noah oliver olivia omar paul peter rachel robert
    ryan sam samuel sara sarah sophia sophie steve susan thomas tom tomas tomás victor
    william zoe
    aarav aditya akash amit ananya anjali arjun deepak divya kavya krishna manoj neha nikhil
    pooja priya rahul raj rajesh ravi rohan sanjay shreya sneha suresh vikram vijay
    haruto hiroshi kenji yuki yuto sota riku akira takeshi hana yui aoi sakura mei
    wei li ming jun hao xin lei yan chen
    ji-ho min-jun seo-yeon
    joao joão ines inês miguel pedro rafael sofia beatriz diego javier jose josé juan
    lucia lucía pablo carmen ana antonio francesca giulia giovanni matteo lorenzo
    hans klaus jurgen jürgen lukas felix jonas leon mia lea sven lars erik ingrid astrid
    pierre jean louis camille chloé manon hugo
    ahmed ali hassan hussein layla mariam yusuf aisha amina zainab khalid
    wanjiru wanjiku kamau otieno achieng njeri chidi ngozi emeka kwame ama kofi abebe
    ivan olga dmitri natasha anastasia piotr katarzyna
    adam aaron abigail adrian alan albert alicia allison amanda andrea angela anthony ashley
    barbara benedict brandon brian bruce caroline catherine charlotte christopher claire
    craig cynthia dan dana deborah dennis donna dorothy dylan elijah ella ethan evelyn
    gabriel gary grace greg hailey harper heather ian irene isaac jake jasmine jeff jenny
    jeremy jill joan jordan joshua joyce judy julie justin karen kathleen keith kelly kim
    kyle larry lauren linda logan lori madison margaret marie megan melissa michelle
    monica nancy natalie nathan nicholas nicole olive pamela patrick rebecca richard rita
    roger ronald rose ruth sandra scott sean sharon shirley simon stephanie stephen teresa
    tim timothy tyler vanessa victoria walter wendy zachary
    aryan ishaan kabir meera nisha pranav rani sunil tanvi varun yash
    ayumi daiki haruka kaito kenta minato ren sakura takumi yuna
    fernando gabriela isabel luis mateo valentina santiago sebastian camila
    amir farah hamza imran leila nadia omar rania sami tariq yasmin zara
    ade amara bola chiamaka kemi tunde zawadi baraka
    """
)

#: Honorifics before a surname: "Prof. Keller", "Dr Smith".
PERSON_TITLES: frozenset[str] = words("mr mrs ms dr prof professor sir dame")

#: A last word that makes a capitalised phrase an organisation.
ORG_SUFFIXES: frozenset[str] = words(
    """corp corp. corporation inc inc. ltd ltd. llc gmbh ag plc co co. company labs lab
    technologies technology tech systems software solutions bank university college
    institute school academy hospital clinic foundation agency studios studio group
    partners consulting airlines airways motors pharma ventures capital"""
)

#: A last word that makes a capitalised phrase a place.
LOCATION_SUFFIXES: frozenset[str] = words(
    """hills hill park lake street st avenue ave road rd beach bay valley mountain mountains
    island islands station airport river square bridge city county province district
    heights falls peak coast canyon forest village town"""
)

#: Words that make a capitalised phrase an event ("Web Summit", "Berlin Marathon").
EVENT_WORDS: frozenset[str] = words(
    """summit conference con conf marathon festival fest expo show week cup olympics
    hackathon meetup championship championships symposium workshop forum fair gala
    concert tournament games"""
)

#: Lower-case words allowed inside a capitalised name: "University of Toronto".
NAME_CONNECTORS: frozenset[str] = words("of de da del della van von der la le du")

#: Job nouns: "a nurse at X" says X is where someone works.
JOB_NOUNS: frozenset[str] = words(
    """engineer developer programmer designer nurse doctor physician analyst manager
    scientist researcher teacher professor lecturer intern consultant architect lead
    administrator admin accountant lawyer attorney founder cofounder co-founder ceo cto cfo
    pm director editor writer journalist chef barista cashier contractor freelancer
    technician mechanic pilot officer sre devops owner employee staff job position role
    specialist coordinator assistant associate"""
)
