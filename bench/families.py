"""Coverage of the default Detector on invented texts in the shapes of issue 26's families.

    .venv/bin/python bench/families.py [--per-shape N] [--seed S] [--policy FILE] [--family F]

Each shape is one invented template (written from the issue's descriptions and general
clinical writing, never from the corpus): slots marked ``<kind>`` are gold PHI filled from
the project's lexicons (census names, zip-code cities, the synthetic generator's saint list)
or invented values (dates, codes); the rest of the text is not PHI. For each shape the script
prints how many gold phrases the detector covers fully (every alphanumeric token overlaps a
span, as ``bench/genre.py`` counts), and how many non-gold tokens it marks (false alarms).
The ``false_alarms`` family has no gold: it counts marked tokens only. A third of the texts
are written in capitals, as many nursing notes are. Figures: ``bench/README.md``.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import families_places19 as _places19  # noqa: E402

from pipelines.evaluation import tokenize  # noqa: E402
from pipelines.phi import lexicons as lx  # noqa: E402
from pipelines.phi.detector import Detector  # noqa: E402
from pipelines.phi.synthetic import _SAINTS, _cities, _first_names, _last_names  # noqa: E402
from pipelines.policy import Policy  # noqa: E402
from pipelines.spans import Span  # noqa: E402

# family -> shape id -> template. ``<kind>`` is a gold slot; ``{kind}`` a slot that is no PHI.
SHAPES: dict[str, dict[str, str]] = {
    "dates": {
        "c-with": "Seen <md> c chest pain, sent home.",
        "gram-stain": "Urine cx <md> gm neg rods, on cipro.",
        "antecubital": "IV started L AC <md> by nursing.",
        "dotted-year": "Last seen <md.yy> in clinic for follow up.",
        "mmddyy": "Fell at home on <mmddyy> and again last week.",
        "header-line": "<day> <mon>, <yy>\n2000 - 0800 slept well, no events.",
        "arrow-range": "<day>-><daymon> events reviewed with team.",
        "event-equal-pair": "Pt {event} on <eqmd> at home, strength 5/5.",
        "weekday-equal-pair": "Seen on {weekday} <eqmd> in clinic.",
        "md-left-ac": "IV placed on <md> L AC by nursing.",
        "day-slash-month": "Seen <dslashmon> in clinic.",
        "named-short-year": "Seen <mon> <day> <yy> in clinic.",
        "month-year-dash": "Seen in clinic since <mmyyyy>.",
        "blank-mdy": "Admitted on <blankmdy> with chest pain.",
        "day-dash-month": "Admitted <daydashmon> with urosepsis.",
        "month-of-yy": "Stroke <monofyy>, residual weakness.",
        "year-range": "Lived in the city <yearrange>, then moved.",
        "cue-over-unit": "Seen <md> {unitword} swelling, US negative.",
        "day-range": "Inpatient <dayrange> for pneumonia.",
        "mmddyyyy": "DOB <mmddyyyy>, no allergies.",
        "pair-days-count": "Vanc {datecue} <mdlate> days 1-3, then stopped.",
        "blood-cx-times": "Blood cx <mdlate> x 2, no growth to date.",
        "dos-compact": "DOS <mmddyy>, seen by PT.",
        "dob-dotted": "{dotteddob} <mmddyy> per chart.",
        # session 17
        "decade": "Drank heavily in the <decade4>, sober since.",
        "decade-cued": "Seizures {decadecue} the <decade2>, on keppra.",
        "month-the-ordinal": "Surgery on <monthe>, did well.",
        "weekday-pair": "Seen {weekdayfull} <mdfrac> by PCP.",
        "weekday-ordinal": "Seen {weekday} the <ordinal> for follow up.",
        # session 18
        "year-range-clock": "Smoked <clockyears>, then quit.",
    },
    "ages": {
        "subject-is": "Pt is <age90> and lives alone.",
        "turned": "She turned <age90> last week.",
        "apposition-title": "{title} <last>, <age90>, lives alone.",
        "apposition-paren": "{person} (<age90>) seen in clinic today.",
        "apposition-name-clause": "<namefirst>, <age90>, lives alone with her cat.",
        "bracket-bare-name": "<namefirst> (<age90>) seen in clinic today.",
        "words-cued": "Pt aged <age90words>, frail, lives alone.",
        "words-subject": "She is <age90words> and sharp as ever.",
        "plus-yo": "<age90plusyo> female with CHF.",
        # session 18
        "apposition-drug-first": "<drugfirst>, <age90>, still drives to church.",
        "bracket-common-first": "<commonfirst> (<age90>) seen in clinic with her son.",
        "caps-name-in-mixed": "<CAPSFIRST>, <age90>, lives with her niece.",
        # session 19
        "opening-pt": "Pt <age90> s/p fall at home.",
        "opening-label": "{label}:\n<age90> s/p fall at home.",
        "opening-sex-comma": "<age90>, {sexword}, s/p fall at home.",
        "opening-lady": "<age90> {sexword}, fell at home.",
        "bracket-surname": "<surnameword> (<age90>) {personverb} with her son.",
    },
    "places": {
        "saint-alone": "<saint> has a bed for him tomorrow.",
        "saint-initial": "Bed offered at <stinitial>. pending insurance.",
        "regional": "Transferred from <townregional> this am.",
        "lower-memorial": "Family prefers <memorial> for rehab.",
        "city-descriptor": "Follows with PCP at <town> Family Care.",
        "satellite": "Labs drawn at our <town> satellite clinic.",
        "initialism": "Was seen at <acr> clinic last month.",
        "new-town": "Lives with daughter in <newtown>.",
        "employer-caps": "HUSBAND CEO OF <orgword>, AT BEDSIDE.",
        "employer-lower": "Son works for <orglower>. per wife.",
        "lower-floor": "pt a+ox3, mae. came from <lacr> floor yesterday, stable.",
        "two-letter-hospital": "Transferred from <xh> for further care.",
        "general-no-head": "Came from <towngeneral> last night, stable.",
        "community-no-head": "Seen at <towncommunity> yesterday for labs.",
        "suffix-slip": "Pt is from <townslip>, lives with son.",
        "modifier-pair": "Transferred from <townmodpair> today for cath.",
        "weak-modifier-moved": "Came from <townweak> yesterday, stable.",
        "country-regional": "Transferred from <countryregional> this am.",
        "employer-as-job": "Works as a clerk for <orgsuffixed>, days.",
        "employer-apposition": "Her employer, <orgsuffixed>, offers insurance.",
        "employer-lower-bare": "Husband employed by <orgbare> for ten years.",
        # session 17
        "highway": "MVC on <highway> this am, restrained.",
        "highway-house": "Lives at <househighway> with wife.",
        "house-letter": "Lives at <houseletter> with wife.",
        "acronym-transfer": "Pt is a <hacr> transfer for cath.",
        "acronym-arrow": "Transferred <hacr> -> here for cath.",
        "name-regional": "Transferred from <firstregional> this am.",
        # session 18
        "acronym-outside": "Outside hospital <clinhacr> sent records.",
        "acronym-osh-label": "OSH: <hacr>, records pending.",
        "saint-lower-bare": "pt a+ox3. <lowersaint> has a bed for him tomorrow.",
        "saint-initial-dot": "Accepted at <stdotinitial> for rehab.",
        "regional-unit": "Came from <townregional> ED last night.",
        "city-like-state": "Daughter lives in <nycity>, New York.",
    },
    "names": {
        "first-initial": "<first> <initial>. called back about results.",
        "dr-initial": "Dr. <initial>. rounded this am.",
        "short-first": "A 61-year-old man, <shortfirst> <initial>., asks about his meds.",
        "misspelt-title": "Discussed with the renal doctr <last> today.",
        "list-cue-later": "<LAST> <LAST> AND DRS <LAST> AND <LAST> IN TO SEE PT.",
        "section-lower": "Visitors: <lowerfirst> stayed overnight.",
        "age-opening": "<age90> s/p fall at home, admitted for pain control.",
        "drs-comma-list": "DRS. <WORDLAST>, <WORDLAST> AND <WORDLAST> IN TO SEE PT.",
        "label-word-first": "Family: <wordfirst> and <wordfirst> at bedside, updated.",
        "nfd-accented": "Seen by Dr. <nfdfirst> <last> this am.",
        "possessive": "Spoke with Dr. <last>'s office re: appt.",
        "bare-initial-title": "Dr <initial> to see pt this am.",
        "bare-initial-first": "Spoke with <first> <initial> about the plan.",
        "kin-commas-short": "son, <twofirst>, at bedside, updated.",
        "message-for-initial": "Message left for <first> <initial> to call back.",
        "lm-for-initial": "LM for <first> <initial> re results.",
        "kin-commas-common": "{kin}, <commontwo>, called this am.",
        "lm-lower-initial": "lm for <lowerfirstinitial> to call back.",
        "sign-off": "Plan reviewed with team.\nThanks, <namefirst>",
        "sign-off-lower": "will recheck lytes in am.\nthx, <lowernamefirst>",
        "particle-surname": "Seen by Dr. <particlelast> this am.",
        "particle-full": "Wife <namefirst> <particlelast> at bedside.",
        "apostrophe-hyphen": "Spoke with Mrs. <apolast> re: plan.",
        "rn-lower": "the rn <lowerfirst> said pt refused meds.",
        "kin-newer-first": "Pt resting. Her {kin} <newfirst> visited this afternoon.",
        # session 18
        "kin-newer-caps": "PT RESTING. {POSS} {KIN} <NEWFIRST> {AFTERKIN}.",
        "kin-newer-lower": "pt resting. {possl} {kin} <newfirstlower> {afterkinl}.",
        "particle-common-caps": "SEEN BY DR. <PARTICLECOMMON> TODAY, PLAN UNCHANGED.",
        "particle-common-lower": "seen by dr <particlecommonl> today, plan unchanged.",
        "email-glued": "Results sent to Dr. <last> <gluedemail> today.",
        "drs-and-common": "SEEN BY DRS <LAST> AND <WORDLAST> THIS AM, PLAN UNCHANGED.",
        "hyphen-common-caps": "SPOKE WITH MRS. <LAST>-<WORDLAST> RE: PLAN.",
        # session 19 (names, part five)
        "initial-colon": "Spoke with <namefirst> <initial>: she agrees with the plan.",
        "initial-pronoun": "<namefirst> <initial>. said she will call back.",
        "wrap-link": "Spoke with\n<namefirst> <initial>. re plan.",
        "wrap-title": "Seen by Dr.\n<last> this am, plan unchanged.",
        "credential-after": "Seen by <namefirst> <last>, {cred} today.",
        "foreign-title": "Spoke with {ftitle} <last> re plan.",
        "nickname-quotes": "<namefirst> {q}<namefirst>{q} <last> called back.",
        "mc-apart": "Seen by Dr. <mcapart> today.",
        "apostrophe-kin": "{Kint} <namefirst> <apolast1> at bedside.",
        "kin-initial": "{Kint} <initial>. called about the plan.",
        "list-comma-drs": "<LAST> <LAST>, DRS <LAST> AND <LAST> IN TO SEE PT.",
        "label-wrap": "Visitors:\n<lowernamefirst> stayed overnight.",
        "label-dash": "Visitors - <lowernamefirst> stayed overnight.",
        "label-list-lower": "Visitors: <lowernamefirst> and <lowernamefirst> stayed.",
        "label-plural-s": "Visitor(s): <lowernamefirst>, {kin}.",
    },
    "identifiers": {
        "mrn-is": "His MRN is <code> per registration.",
        "policy": "Insurance policy <code> on file.",
        "plan-hash": "Ins plan #<code> verified.",
        "hmo-id-is": "HMO ID is <d444> per card.",
        "groups-333": "Member id <d333> on file.",
        "ssn-blank": "Social security # <ssnblank> on file.",
        "hash-end": "Requisition # <digits6>. Sent to lab.",
        "mrn-on-file": "MRN on file is <digits7>, armband checked.",
        "card-no-cue": "Copay paid with <card> today.",
        "card19-cue": "Card <card19> on file.",
        "card19-no-cue": "Refund sent to <card19> today.",
        "plate-filler": "Plate no. for his car: <plate>.",
        "vin-filler": "VIN on the truck is <vin>.",
        "acct-filler": "Acct no. for copay <acct> per billing.",
        "mbi": "MBI: <mbi> per card.",
        "cert": "Death cert # <code> filed.",
        "fax-filler": "Fax number for the office is <phone>.",
        "email-of-kin": "Son <first> asked us to write to <email> with results.",
    },
    "false_alarms": {
        "catheter": "{eponym} catheter placed without difficulty.",
        "kin-word-ending": "Pt stable. Son Notified of transfer. Daughter Supportive of plan.",
        "decade-bp-hr": "BP in the 80s systolic, HR in the 110s-120s, T in the 100s.",
        "transfer-units": "Transferred from ICU to CT, then from OSH to the cath lab.",
        "valve": "Trial of Passy-Muir valve today, tolerated.",
        "drain": "Jackson-Pratt drain with serosanguinous output.",
        "filter": "Greenfield filter placed by IR.",
        "dressing": "Tegaderm dressing to L arm, clean.",
        "brand-xl": "Home meds: Toprol XL, Wellbutrin SR, Ditropan XL.",
        "rehab-verb": "Plan to start rehab tomorrow with PT.",
        "vent-fraction": "PS raised to 11/8 overnight, tolerating.",
        "language": "Speaks Haitian Creole and some Spanish; Portuguese interpreter.",
        "icu-unit": "Transferred to the CCU then to the SICU overnight.",
        "procedure-eponym": "S/p {procedure}, doing well; {procedure} procedure last year.",
        "drug-brand-lacking": "Pt on Keppra and {brand}.",
        "season-year": "Hx of depression since {season} <year>, stable.",
        "in-hall": "{KIN} IN HALL, UPDATED.",
        "specialty": "Follows with {specialty} for HTN.",
        "service-acronym": "Pt followed by {svc} {svcnoun}.",
        "unit-lower": "pt a+ox3, mae. transferred to {unit} overnight, stable.",
        "dose-pair": "{combo} {dosepair} {frequency}, no side effects.",
        "rr-pair": "On AC, RR {rrpair} with good sats.",
        "dose-day-range": "Take {fraction}-1 tab prn pain.",
        "sat-subject": "Pt is {sat} on {o2} this am.",
        "lab-trend": "{lab} {labpair} this am, stable.",
        "ett-goal": "ETT {ettpair} at the lip; TF at {tfpair} goal.",
        "modifier-nouns": "Under regional anesthesia; General surgery f/u; community acquired pna.",
        "letter-lookalikes": "Vitamin K given, Hep B due, type A pos, Group B strep neg, Stage D.",
        "side-letter": "Mrs. <last> R arm weak, L knee pain, C diff neg.",
        "vitals-commas": "HR {sat}, BP 120/80, sat {sat}, RR 18, MAP ({sat}).",
        "apgar": "Apgars {apgar} at delivery, DOB <mdyy>.",
        "caps-in-clinic": "SEEN ON <mdyy> IN CLINIC FOR FOLLOW UP.",
        "clock-groups": "Meds given {clockgroups}, tolerated.",
        "bracket-values": "Tele ({sat}) NSR, Ensure ({sat}) ml given, Vent ({sat}) on.",
        "letter-pair-after-name": "Dr. <last> B and C serologies sent.",
        "message-services": "Message left for Case Management; spoke with Hospice re plan.",
        "weak-modifier-services": "Referred to Behavioral Health; Home Health to resume.",
        "employer-common": "Works for the VA; retired from the army; a nurse for the county.",
        "kin-commas-words": "son, ok, called back; wife, in, pain; son, so, called.",
        # session 17
        "nutrition": "Tube feeds of {formula} at 40 ml/hr, at goal.",
        "incubator": "Infant remains in {incubator}, temp stable.",
        "roles": "{roleline}",
        "decade-vitals": "Sats in the {satdecade} on 2L, stable.",
        "weekday-schedule": "Coumadin: Mon 1/2, Tue 1, Wed 1/2.",
        "rt-therapy": "Seen by RT 2x overnight; SIMV at RR 14.",
        "acronym-clinical": "Pt is an {clinacr} transfer, stable.",
        # session 18
        "kin-caps-words": "PT RESTING. {POSS} {KIN} {KINWORD} ABOUT PLAN.",
        "kin-service": "{Kint} {service} worker called; {Kint} {service} aware of plan.",
        "kin-title-word": "Pt resting.\n{Kint} {wordt} with family tonight, updated.",
        "military": "{militaryline}",
        "as-a-job": "Husband works as a {job}; she worked as a {job} for years.",
        # session 19 (names, part five)
        "score-head": "{Score} {scorehead} {sat}, stable.",
        "score-value": "{Score} {sat}; {Score} {sat} this am.",
        "sign-possessive": "{Sign}'s sign negative; {Sign} sign neg.",
        "kin-role-caps": "{POSS} {KIN} {ROLEW} AT BEDSIDE, UPDATED.",
        "kin-hyphen-eponym": "Cirrhosis, Child-Pugh {letter}; MELD {sat}.",
        "device-words": "Foley to gravity; Swan in place; Yankauer at bedside.",
        "languages-nations": "Pt is {nation}, speaks {language}; interpreter used.",
        "walker-ordered": "Walker ({sat}) ordered, Tele ({sat}) on.",
    },
}
# session 19, helper places: its shapes live in their own module
for _family, _shapes in _places19.SHAPES.items():
    SHAPES[_family].update(_shapes)
_EPONYMS = ("Foley", "Hickman", "Groshong", "Quinton", "Swan-Ganz", "Pigtail")
# Words the invented texts use as fillers and gold values (general knowledge, no corpus)
_EVENTS = ("fell", "was seen", "had a BM", "had surgery")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
_PROCEDURES = ("Whipple", "Nissen", "Hartmann", "Kasai", "Heller", "Fontan")
_BRANDS = ("Dilantin", "Versed", "Percocet", "Augmentin", "Sinemet", "Kayexalate")
_WORD_SURNAMES = ("BAKER", "WARD", "HILL", "RICE", "STONE", "FOX", "BELL", "WOOD", "MARSH")
_WORD_FIRSTS = ("will", "faith", "hope", "grace", "mark", "drew", "joy", "dawn", "rose")
_NFD_FIRSTS = ("Jose\u0301", "Rene\u0301e", "Zoe\u0308", "Ine\u0301s", "Jo\u0303ao")
_SEASONS = ("Spring", "Summer", "Fall", "Winter")
_KIN = ("WIFE", "SON", "DAUGHTER", "HUSBAND", "SISTER")
_SPECIALTIES = ("Family Practice", "Family Medicine", "Internal Medicine", "General Surgery")
_SERVICE_NOUNS = ("team", "clinic", "follow-up", "consult", "referral", "worker", "counselor")
_UNITS = ("cvicu", "tsicu", "cmed", "ficu", "ltach", "sds")
_TWO_FIRSTS = ("jo", "bo", "ty", "li", "su", "yu", "lu", "ai")
_COMMON_TWO = ("al", "ed")
_KIN_LOWER = ("wife", "son", "husband", "brother")
# first names given widely only after the 1990 census (general knowledge of naming trends)
_NEWER_FIRSTS = ("Liam", "Jaxon", "Nevaeh", "Kayden", "Brayden", "Nico", "Kobe", "Zara", "Enzo")
_MOD_PAIRS = ("Regional Medical", "General Medical", "Community Medical", "Memorial Medical")
_WEAK_MODS = ("Family", "Health", "County")
# countries' names that US towns bear too
_COUNTRY_TOWNS = ("Jordan", "Anguilla", "Chad", "Panama", "Cuba", "Peru", "Lebanon")
_ORG_SUFFIXES = ("Industries", "Foods", "Logistics", "Motors", "Systems")
_SUFFIXES = ("Heights", "Springs", "Village", "Junction", "Crossing", "Landing")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTHS_FULL = ("January", "March", "April", "June", "July", "August", "October", "December")
_UNIT_WORDS = ("L arm", "R leg", "L hand", "LLE", "RUE")
_COMBOS = ("Vytorin", "Lotrel", "Caduet", "Exforge", "Hyzaar")
_FREQUENCIES = ("daily", "qd", "po", "qhs", "bid")
_LABS = ("WBC", "Hgb", "Hct", "K", "Plt")
_O2 = ("RA", "2L", "4L NC", "50% FM")
_DATE_CUES = ("from", "started", "since", "on")
_DOTTED_DOB = ("D.O.B.", "D.O.B", "d.o.b.", "D.O.B.:")
_TITLES = ("Mrs", "Mr.", "Ms", "MRS.")
_PEOPLES = ("Pt", "patient", "Patient", "the pt")
_CLOCKS = ("0000", "0200", "0400", "0800", "1200", "1600", "2000", "2200")
_AGE_WORDS = ("ninety", "ninety-two", "ninety four", "ninety-seven", "one hundred")
_PARTICLES = ("van der", "de la", "van", "von", "bin", "del", "di")

# session 17 fillers and values (general knowledge, no corpus)
_DECADE_CUES = ("since", "during", "back in", "throughout")
_FULL_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
_HIGHWAYS = ("Route", "Rte", "Hwy", "Highway", "Interstate")
_FORMULAS = ("Glucerna", "Jevity 1.5", "Nepro", "Osmolite", "Peptamen", "Pulmocare", "Neosure")
_INCUBATORS = ("Isolette", "Giraffe Omnibed", "isolette", "Omnibed")
_ROLE_LINES = (
    "Home Health Aide comes 3x/week.",
    "UNIT CLERK AWARE.",
    "Clerk aware of transfer.",
    "Retired Marine, lives alone.",
    "EX-NAVY, WORKED AS A WELDER.",
)
_HOSPITAL_ENDS = ("MH", "MC", "RMC", "CH", "GH")
_CLINICAL_ACRONYMS = ("OSH", "SAH", "ICH", "SDH", "TAH", "IMH")
# session 18 fillers (general English, no corpus): possessives, what follows a kin word's
# name, and words after a kin word that are no name (states, verbs, roles; several outside
# name_kin_not_names.txt, to test the rule rather than the list)
_POSS = ("HER", "HIS", "PT'S", "THEIR")
_AFTER_KIN = ("CALLED THIS AM", "AT BEDSIDE, UPDATED", "TO VISIT AT 2", "AWARE OF PLAN")
_KIN_WORDS = (
    "RANG", "IRATE", "TEARY", "DEAF", "ANXIOUS", "UPDATED", "CALLED", "VISITS",
    "PHONED", "DROVE", "WEPT", "PLEASANT", "HCP", "AWRE", "TELE", "LATE", "NOW",
)  # fmt: skip
# surnames after a particle that are common English words ("von Post", "van Horn")
_PARTICLE_HEADS = ("Post", "Horn", "Wolf", "Long", "Camp", "Bell", "Fleet", "Dam", "Berg")
_KIN_TITLE = ("Son", "Wife", "Daughter", "Husband", "Sister")
_SERVICES = ("Hospice", "Home Care", "Social Work", "Case Management", "Home Health")
_TITLE_WORDS = ("Has", "Home", "Here", "Was", "Came", "Says", "Also", "Still")

# session 18: hospital-shaped acronyms that are clinical abbreviations too (general knowledge)
_CLINICAL_HOSPITAL = ("VCH", "CGH", "MCH", "CMC", "PMC", "MMC", "NMH", "BMC", "HMC", "OGH")
_JOBS = ("driver", "cook", "farmer", "carpenter", "mechanic", "nurse", "teacher", "barber")
_MILITARY_LINES = ("Ex-Marine, lives alone.", "Former Marine, smokes.", "Marine veteran.")
# session 19 fillers (general knowledge, no corpus)
_CREDENTIALS = ("NP", "PA-C", "RN", "MD", "CNM", "DNP", "APRN", "DO")
_FOREIGN_TITLES = ("Sra.", "Mme", "Herr", "Frau", "Dra.", "Prof.", "Srta.", "Mlle")
_QUOTES = ('"', "'")
_AGE_LABELS = ("HPI", "CC", "Subjective", "S", "ID")
_SEX_WORDS = ("female", "male", "woman", "lady", "gentleman")
_PERSON_VERBS = ("seen in clinic", "lives alone", "is here", "presents", "was seen")
# eponymous scores, scales and signs (general medical knowledge)
_SCORES = ("Braden", "Norton", "Morse", "Glasgow", "Ballard", "Ranson", "Barthel", "Wells")
_SCORE_HEADS = ("score", "scale", "criteria", "index", "coma scale")
_SIGNS = ("Murphy", "Homan", "Babinski", "Kernig", "Chvostek", "Trousseau", "Tinel")
_ROLE_WORDS = ("AIDE", "SITTER", "CLERK", "ESCORT")
_NATIONS = ("Haitian", "Polish", "Vietnamese", "Brazilian", "Somali", "Russian")
_LANGUAGES = ("Creole", "Portuguese", "Cantonese", "Mandarin", "Spanish", "Tagalog")
_SLOT = re.compile(r"<(\w+(?:\.\w+)?)>|\{(\w+)\}")


class _Draw:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.towns = [c for c in _cities() if " " not in c and lx.zipf(c.lower()) < 3.0]
        # first names far more names than words ("Hilda", not "Will"): a name with no cue
        self.name_firsts = [f for f in _first_names() if lx.name_score(f.lower()) >= 1.5]
        # first names a drug list holds too ("Laura", "Martin"), and everyday words far more
        # a first name than a surname ("Frank", "Grace")
        self.drug_firsts = [f for f in self.name_firsts if lx.clinical_word(f.lower())]
        self.common_firsts = [
            f
            for f in self.name_firsts
            if 4.0 <= lx.zipf(f.lower()) < 5.0
            and lx.first_names().get(f.lower(), 0) > lx.last_names().get(f.lower(), 0)
        ]
        # surnames that are everyday words too, given more as surnames ("Walker", "Lee")
        self.surname_words = [
            f.title()
            for f in lx.last_names()
            if lx.name_score(f) >= 1.5
            and 4.0 <= lx.zipf(f) < 5.0
            and lx.last_names()[f] > lx.first_names().get(f, 0)
            and f.isalpha()
        ]

    def value(self, kind: str) -> str:
        table: dict[str, Callable[[], str]] = {
            "first": lambda: self.rng.choice(_first_names()),
            "last": lambda: self.rng.choice(_last_names()),
            "LAST": lambda: self.rng.choice(_last_names()).upper(),
            "shortfirst": lambda: self.rng.choice([f for f in _first_names() if len(f) <= 3]),
            "lowerfirst": lambda: self.rng.choice(_first_names()).lower(),
            "initial": lambda: self.rng.choice("BCFGHJKLMNPQRTVWZ"),
            "twofirst": lambda: self.rng.choice(_TWO_FIRSTS),
            "newfirst": lambda: self.rng.choice(_NEWER_FIRSTS),
            "email": lambda: (
                f"{self.rng.choice(_first_names()).lower()}."
                f"{self.rng.choice(_last_names()).lower()}@example.org"
            ),
            "townslip": lambda: f"{self.rng.choice(self.towns)} {self._slip()}",
            "saint": lambda: "St. " + self.rng.choice(_SAINTS),
            "stinitial": lambda: "St " + self.rng.choice("BCFGHJKLMNPQRTVWZ"),
            "town": lambda: self.rng.choice(self.towns),
            # a facility named by its town and a modifier, no head: all of it is the name
            "townregional": lambda: self.rng.choice(self.towns) + " Regional",
            "towngeneral": lambda: self.rng.choice(self.towns) + " General",
            "towncommunity": lambda: self.rng.choice(self.towns) + " Community",
            "townmodpair": lambda: f"{self.rng.choice(self.towns)} {self.rng.choice(_MOD_PAIRS)}",
            "townweak": lambda: f"{self.rng.choice(self.towns)} {self.rng.choice(_WEAK_MODS)}",
            "countryregional": lambda: self.rng.choice(_COUNTRY_TOWNS) + " Regional",
            "orgsuffixed": lambda: (
                f"{self.rng.choice(self.towns)} {self.rng.choice(_ORG_SUFFIXES)}"
            ),
            "commontwo": lambda: self.rng.choice(_COMMON_TWO),
            "kin": lambda: self.rng.choice(_KIN_LOWER),
            "newtown": lambda: "New " + self.rng.choice(self.towns),
            "acr": lambda: "".join(self.rng.choice("BCDFGHJKLMNPQRSTVWXZ") for _ in range(3)),
            "orgword": lambda: self.rng.choice(self.towns).upper() + "CO",
            "orglower": lambda: self.rng.choice(self.towns).lower() + "tech corp",
            "memorial": lambda: (
                f"{self.rng.choice(_last_names())} {self.rng.choice(_last_names())} memorial"
            ),
            "md": lambda: f"{self.rng.randint(1, 12)}/{self.rng.randint(1, 28)}",
            # a day no small fraction shares ("1/2 x 2" is one)
            "mdlate": lambda: f"{self.rng.randint(1, 12)}/{self.rng.randint(5, 28)}",
            "mdyy": lambda: (
                f"{self.rng.randint(1, 12):02d}/{self.rng.randint(1, 28):02d}/{self.rng.randint(70, 99)}"
            ),
            "datecue": lambda: self.rng.choice(_DATE_CUES),
            "dotteddob": lambda: self.rng.choice(_DOTTED_DOB),
            "title": lambda: self.rng.choice(_TITLES),
            "person": lambda: self.rng.choice(_PEOPLES),
            "card": self._card,
            "card19": self._card19,
            "namefirst": lambda: self.rng.choice(self.name_firsts),
            "lowernamefirst": lambda: self.rng.choice(self.name_firsts).lower(),
            "lowerfirstinitial": lambda: (
                f"{self.rng.choice(self.name_firsts).lower()} {self.rng.choice('bfghjkmnqrtwz')}"
            ),
            "age90words": lambda: self.rng.choice(_AGE_WORDS),
            "age90plusyo": lambda: f"{self.rng.randint(90, 104)}+ y/o",
            "particlelast": lambda: (
                f"{self.rng.choice(_PARTICLES)} {self.rng.choice(_last_names())}"
            ),
            "apolast": lambda: (
                f"{self.rng.choice(('O', 'D'))}'{self.rng.choice(_last_names())}-"
                f"{self.rng.choice(_last_names())}"
            ),
            "orgbare": lambda: self.rng.choice(self.towns).lower() + "tron",
            "plate": lambda: self._code("D" + "L" * 3 + "D" * 3),
            "vin": lambda: self._code("D" + "X" * 7 + "D" * 9),
            "acct": lambda: f"{self.rng.randint(10, 99)}-{self.rng.randint(10000, 99999)}",
            "mbi": lambda: self._code("DLXDLXDLLDD"),
            "phone": lambda: f"{self.rng.randint(201, 989)}-555-{self.rng.randint(100, 199):04d}",
            "apgar": lambda: f"{self.rng.randint(6, 8)}/{self.rng.randint(8, 9)}",
            "clockgroups": lambda: " ".join(self.rng.sample(_CLOCKS, 4)),
            "md.yy": lambda: (
                f"{self.rng.randint(1, 12)}/{self.rng.randint(1, 28)}.{self.rng.randint(70, 99)}"
            ),
            "mmddyy": lambda: (
                f"{self.rng.randint(1, 12):02d}{self.rng.randint(1, 28):02d}"
                f"{self.rng.randint(70, 99)}"
            ),
            "day": lambda: str(self.rng.randint(1, 27)),
            "mon": lambda: self.rng.choice(_MONTHS),
            "yy": lambda: str(self.rng.randint(70, 99)),
            "daymon": lambda: (
                f"{self.rng.randint(2, 28)} {self.rng.choice(_MONTHS)}, {self.rng.randint(70, 99)}"
            ),
            "age90": lambda: str(self.rng.randint(90, 104)),
            "code": lambda: (
                "".join(self.rng.choice("ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(2))
                + "-"
                + "".join(self.rng.choice("0123456789") for _ in range(6))
            ),
            "d444": lambda: "-".join(str(self.rng.randint(1000, 9999)) for _ in range(3)),
            "d333": lambda: "-".join(str(self.rng.randint(100, 999)) for _ in range(3)),
            "eponym": lambda: self.rng.choice(_EPONYMS),
            "eqmd": lambda: f"{(n := self.rng.randint(1, 12))}/{n}",
            "dslashmon": lambda: (
                f"{self.rng.randint(1, 28):02d}{self.rng.choice('/.')}"
                f"{self.rng.choice(_MONTHS)}/{self.rng.randint(70, 99)}"
            ),
            "mmyyyy": lambda: (
                f"{self.rng.randint(1, 12):02d}{self.rng.choice('-.')}{self.rng.randint(1970, 2020)}"
            ),
            "blankmdy": lambda: (
                f"{self.rng.randint(1, 12)} {self.rng.randint(1, 28)} {self.rng.randint(70, 99)}"
            ),
            "monofyy": lambda: f"{self.rng.choice(_MONTHS)} of {self.rng.randint(70, 99)}",
            "daydashmon": lambda: f"{self.rng.randint(1, 28)}-{self.rng.choice(_MONTHS)}",
            "yearrange": lambda: (
                f"{(y := self.rng.randint(1960, 2010))}{self.rng.choice(('-', ' to '))}"
                f"{y + self.rng.randint(1, 15)}"
            ),
            "dayrange": lambda: (
                f"{self.rng.randint(1, 12)}/{(d := self.rng.randint(1, 20))}"
                f"-{d + self.rng.randint(1, 8)}"
            ),
            "mmddyyyy": lambda: (
                f"{self.rng.randint(1, 12):02d}{self.rng.randint(1, 28):02d}"
                f"{self.rng.randint(1930, 2010)}"
            ),
            "ssnblank": lambda: (
                f"{self.rng.randint(100, 665)} {self.rng.randint(10, 99)} "
                f"{self.rng.randint(1000, 9999)}"
            ),
            "digits6": lambda: str(self.rng.randint(100000, 999999)),
            "digits7": lambda: str(self.rng.randint(1000000, 9999999)),
            "unitword": lambda: self.rng.choice(_UNIT_WORDS),
            "combo": lambda: self.rng.choice(_COMBOS),
            "dosepair": lambda: f"{self.rng.choice((5, 10))}/{self.rng.choice((10, 20, 25))}",
            "frequency": lambda: self.rng.choice(_FREQUENCIES),
            "rrpair": lambda: f"{(r := self.rng.randint(10, 16))}/{r + self.rng.randint(2, 12)}",
            "fraction": lambda: self.rng.choice(("1/2", "1/3", "1/4")),
            "sat": lambda: str(self.rng.randint(90, 100)),
            "o2": lambda: self.rng.choice(_O2),
            "lab": lambda: self.rng.choice(_LABS),
            "labpair": lambda: (
                f"{(v := self.rng.randint(3, 12))}/{v + self.rng.choice((-1, 1, 2))}"
            ),
            "ettpair": lambda: f"{self.rng.choice((7, 8))}/{self.rng.randint(20, 25)}",
            "tfpair": lambda: f"{self.rng.randint(10, 40)}/{self.rng.choice((50, 60, 70, 80))}",
            "WORDLAST": lambda: self.rng.choice(_WORD_SURNAMES),
            "wordfirst": lambda: self.rng.choice(_WORD_FIRSTS),
            "nfdfirst": lambda: self.rng.choice(_NFD_FIRSTS),
            "event": lambda: self.rng.choice(_EVENTS),
            "weekday": lambda: self.rng.choice(_WEEKDAYS),
            "procedure": lambda: self.rng.choice(_PROCEDURES),
            "brand": lambda: self.rng.choice(_BRANDS),
            "lacr": lambda: "".join(self.rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(3)),
            "xh": lambda: self.rng.choice("BCDGJKLNQRTWZ") + "H",
            "season": lambda: self.rng.choice(_SEASONS),
            "year": lambda: str(self.rng.randint(1970, 2020)),
            "KIN": lambda: self.rng.choice(_KIN),
            "specialty": lambda: self.rng.choice(_SPECIALTIES),
            "svc": lambda: self.rng.choice(("MH", "BH")),
            "svcnoun": lambda: self.rng.choice(_SERVICE_NOUNS),
            "unit": lambda: self.rng.choice(_UNITS),
            # session 17
            "decade4": lambda: (
                f"{self.rng.randint(193, 201)}0{self.rng.choice(('s', chr(39) + 's'))}"
            ),
            "decade2": lambda: f"{self.rng.choice((5, 6, 7, 8, 9))}0s",
            "decadecue": lambda: self.rng.choice(_DECADE_CUES),
            "monthe": lambda: f"{self.rng.choice(_MONTHS_FULL)} the {self._ordinal()}",
            "weekdayfull": lambda: self.rng.choice(_FULL_WEEKDAYS),
            "mdfrac": lambda: self.rng.choice(
                ("3/4", "1/2", "2/3", f"{self.rng.randint(5, 12)}/2")
            ),
            "ordinal": self._ordinal,
            "highway": lambda: f"{self.rng.choice(_HIGHWAYS)} {self.rng.randint(1, 299)}",
            "househighway": lambda: (
                f"{self.rng.randint(2, 9999)} {self.rng.choice(('Rt', 'Route', 'Hwy'))} "
                f"{self.rng.randint(1, 299)}"
            ),
            "houseletter": lambda: (
                f"{self.rng.randint(2, 999)}{self.rng.choice('ABCD')} "
                f"{self.rng.choice(self.towns)} {self.rng.choice(('Street', 'Ave', 'Road'))}"
            ),
            "hacr": lambda: (
                "".join(self.rng.choice("BDFJKLNPQVWXZ") for _ in range(self.rng.randint(1, 2)))
                + self.rng.choice(_HOSPITAL_ENDS)
            ),
            "firstregional": lambda: self.rng.choice(_first_names()) + " Regional",
            "formula": lambda: self.rng.choice(_FORMULAS),
            "incubator": lambda: self.rng.choice(_INCUBATORS),
            "roleline": lambda: self.rng.choice(_ROLE_LINES),
            "satdecade": lambda: self.rng.choice(("90s", "high 90s", "low 90s", "mid 90s")),
            "clinacr": lambda: self.rng.choice(_CLINICAL_ACRONYMS),
            # session 18
            "drugfirst": lambda: self.rng.choice(self.drug_firsts),
            "commonfirst": lambda: self.rng.choice(self.common_firsts),
            "CAPSFIRST": lambda: self.rng.choice(self.name_firsts).upper(),
            "POSS": lambda: self.rng.choice(_POSS),
            "possl": lambda: self.rng.choice(_POSS).lower(),
            "NEWFIRST": lambda: self.rng.choice(_NEWER_FIRSTS).upper(),
            "newfirstlower": lambda: self.rng.choice(_NEWER_FIRSTS).lower(),
            "AFTERKIN": lambda: self.rng.choice(_AFTER_KIN),
            "afterkinl": lambda: self.rng.choice(_AFTER_KIN).lower(),
            "KINWORD": lambda: self.rng.choice(_KIN_WORDS),
            "Kint": lambda: self.rng.choice(_KIN_TITLE),
            # an address written glued to a word before it ("Wendtokafor.w@example.org")
            "gluedemail": lambda: (
                f"{self.rng.choice(_last_names())}{self.rng.choice(_first_names()).lower()}"
                f".{self.rng.choice('bcdfghjkmnpqrtvwz')}@example.org"
            ),
            "service": lambda: self.rng.choice(_SERVICES),
            "wordt": lambda: self.rng.choice(_TITLE_WORDS),
            "PARTICLECOMMON": lambda: self._particle_common().upper(),
            "particlecommonl": lambda: self._particle_common().lower(),
            "clinhacr": lambda: self.rng.choice(_CLINICAL_HOSPITAL),
            "militaryline": lambda: self.rng.choice(_MILITARY_LINES),
            "job": lambda: self.rng.choice(_JOBS),
            "lowersaint": lambda: "st " + self.rng.choice(_SAINTS).lower(),
            "stdotinitial": lambda: "St. " + self.rng.choice("BCFGHJKLMNPQRVWZ"),
            "nycity": lambda: "New York",
            "clockyears": lambda: (
                f"{(y := self.rng.randint(2001, 2014))}{self.rng.choice(('-', ' to '))}"
                f"{y + self.rng.choice((1, 2, 3, 4, 6, 7, 8, 9))}"
            ),
        }
        table.update(self._names19())
        extra = _places19.values(self)
        clash = extra.keys() & table.keys()
        if clash:
            raise KeyError(f"slots defined twice: {sorted(clash)}")
        return {**table, **extra}[kind]()

    def _names19(self) -> dict[str, Callable[[], str]]:
        """Session 19's value kinds of the names, ages and false-alarm shapes."""
        rng = self.rng
        return {
            "cred": lambda: rng.choice(_CREDENTIALS),
            "ftitle": lambda: rng.choice(_FOREIGN_TITLES),
            "q": lambda: rng.choice(_QUOTES),
            "mcapart": lambda: "Mc " + rng.choice(_last_names()),
            "apolast1": lambda: f"{rng.choice(('O', 'D'))}'{rng.choice(_last_names())}",
            "label": lambda: rng.choice(_AGE_LABELS),
            "sexword": lambda: rng.choice(_SEX_WORDS),
            "personverb": lambda: rng.choice(_PERSON_VERBS),
            "surnameword": lambda: rng.choice(self.surname_words),
            "Score": lambda: rng.choice(_SCORES),
            "scorehead": lambda: rng.choice(_SCORE_HEADS),
            "Sign": lambda: rng.choice(_SIGNS),
            "ROLEW": lambda: rng.choice(_ROLE_WORDS),
            "letter": lambda: rng.choice("ABC"),
            "nation": lambda: rng.choice(_NATIONS),
            "language": lambda: rng.choice(_LANGUAGES),
        }

    def _card(self) -> str:
        """A 16-digit card number of a network's first digit with a valid Luhn check digit,
        in 4-4-4-4 groups."""
        body = [self.rng.choice((4, 5, 6))] + [self.rng.randint(0, 9) for _ in range(14)]
        total = sum(d * 2 - 9 if d > 4 else d * 2 for d in body[::-2]) + sum(body[-2::-2])
        digits = "".join(map(str, body)) + str(-total % 10)
        sep = self.rng.choice((" ", "-"))
        return sep.join(digits[k : k + 4] for k in range(0, 16, 4))

    def _card19(self) -> str:
        """A 19-digit card number (Luhn valid) in 4-4-4-4-3 or 6-13 groups or in one run."""
        body = [self.rng.choice((4, 5, 6))] + [self.rng.randint(0, 9) for _ in range(17)]
        total = sum(d * 2 - 9 if d > 4 else d * 2 for d in body[::-2]) + sum(body[-2::-2])
        digits = "".join(map(str, body)) + str(-total % 10)
        sep = self.rng.choice((" ", "-", ""))
        if self.rng.random() < 0.5:
            return sep.join(digits[k : k + 4] for k in range(0, 19, 4))
        return digits[:6] + sep + digits[6:]

    def _code(self, shape: str) -> str:
        """A code by shape: D a digit, L a capital, X either."""
        pools = {"D": "0123456789", "L": "ABCDEFGHJKLMNPRTUVWXY"}
        pools["X"] = pools["D"] + pools["L"]
        return "".join(self.rng.choice(pools[c]) for c in shape)

    def _particle_common(self) -> str:
        return (
            f"{self.rng.choice(('van', 'von', 'de', 'van der'))} {self.rng.choice(_PARTICLE_HEADS)}"
        )

    def _ordinal(self) -> str:
        day = self.rng.randint(1, 28)
        suffix = "th" if 10 <= day <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
        return f"{day}{suffix}"

    def _slip(self) -> str:
        """A generic place word with two neighbouring letters swapped ("Hieghts")."""
        word = self.rng.choice(_SUFFIXES)
        i = self.rng.randint(1, len(word) - 2)
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]

    def fill(self, template: str) -> tuple[str, list[tuple[int, int]]]:
        out: list[str] = []
        gold: list[tuple[int, int]] = []
        pos = at = 0
        for m in _SLOT.finditer(template):
            out.append(template[at : m.start()])
            pos += m.start() - at
            value = self.value(m.group(1) or m.group(2))
            if m.group(1):
                gold.append((pos, pos + len(value)))
            out.append(value)
            pos += len(value)
            at = m.end()
        out.append(template[at:])
        return "".join(out), gold


def _covered(tokens: list[tuple[int, int]], spans: list[Span], start: int, end: int) -> bool:
    inside = [(a, b) for a, b in tokens if a < end and start < b]
    return all(any(s.start < b and a < s.end for s in spans) for a, b in inside)


def _score(detector: Detector, text: str, gold: list[tuple[int, int]]) -> tuple[int, int]:
    """(gold phrases covered, non-gold tokens marked) for one text."""
    spans = detector.detect(text)
    tokens = tokenize(text)
    covered = sum(_covered(tokens, spans, s, e) for s, e in gold)
    alarms = sum(
        1
        for a, b in tokens
        if any(s.start < b and a < s.end for s in spans)
        and not any(s < b and a < e for s, e in gold)
    )
    return covered, alarms


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-shape", type=int, default=60)
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("--policy", type=Path, default=None)
    ap.add_argument("--family", choices=sorted(SHAPES), default=None)
    args = ap.parse_args()
    draw = _Draw(random.Random(args.seed))
    detector = Detector(Policy.load(args.policy) if args.policy else None)
    print(f"{'family':13} {'shape':16} {'phrases':>7} {'covered':>8} {'false tokens':>12}")
    totals: Counter[str] = Counter()
    for family, shapes in SHAPES.items():
        if args.family and family != args.family:
            continue
        for shape, template in shapes.items():
            phrases = covered = alarms = 0
            # one generator per shape: a shape added later leaves the others' texts as they were
            rng = draw.rng = random.Random(f"{args.seed}:{shape}")
            for _ in range(args.per_shape):
                text, gold = draw.fill(template)
                if rng.random() < 1 / 3:
                    text = text.upper()
                got, false = _score(detector, text, gold)
                phrases, covered, alarms = phrases + len(gold), covered + got, alarms + false
            share = f"{covered / phrases:8.3f}" if phrases else f"{'—':>8}"
            print(f"{family:13} {shape:16} {phrases:7d} {share} {alarms:12d}")
            totals[family + ":phrases"] += phrases
            totals[family + ":covered"] += covered
            totals[family + ":alarms"] += alarms
    print()
    for family in SHAPES:
        phrases = totals[family + ":phrases"]
        if not phrases and not totals[family + ":alarms"]:
            continue
        share = f"{totals[family + ':covered'] / phrases:.3f}" if phrases else "—"
        print(f"{family:13} covered {share}  false tokens {totals[family + ':alarms']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
