"""Thread kinds of work, health and study: a job change, an illness, a course."""

from __future__ import annotations

from vivy_lab.synthetic.longconv.threads import Beat, Picker, Thread


def job(c: Picker) -> Thread:
    """A member is unhappy at work, interviews, gets an offer and starts the new job."""
    complaint, complaint_sum = c(
        [
            ("my manager keeps booking meetings at 7pm", "late-evening meetings"),
            ("they froze raises for the whole year", "a pay freeze"),
            ("I've been doing two people's jobs since Lisa left", "doing two people's work"),
            (
                "the new owner wants us in office 5 days, with my 90 min commute",
                "a new five-days-in-office rule",
            ),
            ("got passed over for the promotion. again", "being passed over for promotion"),
        ]
    )
    p = {
        "complaint": complaint,
        "complaint_sum": complaint_sum,
        "company": c(
            [
                "Ledgerly",
                "Brightside Analytics",
                "Crumb & Co",
                "Northwind Logistics",
                "Harbor Health",
                "Pixelforge",
                "Greenleaf Studio",
                "Tallow & Wick",
                "Orbital Freight",
                "Bluebird Labs",
                "Quill Legal",
            ]
        ),
        "role": c(
            [
                "junior data analyst",
                "pastry chef",
                "UX designer",
                "support team lead",
                "backend developer",
                "project coordinator",
                "lab technician",
                "copywriter",
                "account manager",
            ]
        ),
        "day": c(["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]),
        "start": c(["monday after next", "the 1st", "in two weeks", "next monday"]),
        "boss": c(["Denise", "Raj", "Martin", "Claire", "Hugo", "Beatriz", "Owen", "Fatima"]),
        "boss_trait": c(
            [
                "brings donuts on fridays",
                "used to be a professional chef",
                "answers messages in like 4 seconds",
                "has a corgi that comes to the office",
            ]
        ),
        "commute": c(
            [
                "I bike there, 20 min along the river",
                "it's a 12 minute walk!!",
                "two buses but I get to read",
                "I can work from home tuesdays and thursdays",
            ]
        ),
    }
    beats = [
        Beat(
            "Work frustrations",
            "{O} vented about {Pp} job.",
            "{O} is fed up at work over {complaint_sum} and may look for a new job.",
            [
                "x: you ok? you've been quiet|you good? quiet today",
                "o: my job is wearing me down",
                "o: {complaint}, I'm so unhappy at this job #complaint",
                "x: that's so not ok|that's messed up|ugh I'm sorry",
                "o: thinking about looking around tbh",
            ],
        ),
        Beat(
            "Job interview",
            "{O} has a job interview coming up.",
            "{O} has an interview at {company} for a {role} position.",
            [
                "o: sooo I have a job interview {day} #interview",
                "x: WHERE",
                "o: {company}! the job is {role} #role",
                "x: you'd be perfect for that",
                "o: nervous tho",
            ],
            open_question="Will {O} get the new job?",
        ),
        Beat(
            "Job offer",
            "{O} got a job offer and accepted it.",
            "{O} accepted the {role} job at {company}.",
            [
                "o: {company} CALLED",
                "x: and???",
                "o: i got the job!!! offer came in this morning #offer",
                "x: AHHH congrats|CONGRATS!!!|omg yay",
                "o: start date at {company} is {start} #start",
                "x: we're celebrating this weekend",
            ],
            decision="{O} accepted the new job.",
        ),
        Beat(
            "New job",
            "{O} is settling into the new job.",
            "{O} likes {Pp} new manager {boss} at {company}.",
            [
                "x: so how's the new job??",
                "o: honestly? so much better",
                "o: my manager at the new job, {boss}, {boss_trait} #boss",
                "o: and the commute to the new job: {commute} #commute",
                "x: love that for you",
            ],
        ),
    ]
    return Thread(
        "job",
        "work",
        "{Pp} job",
        p,
        beats,
        asks={
            "complaint": [
                "What was {O} unhappy about at {Pp} old job?",
                "Why was {O} so unhappy at {Pp} job?",
                "~Why did {O} want to quit?",
                "~What was the problem at {O}'s previous work?",
            ],
            "role": [
                "What job did {O} apply for at {company}?",
                "What's {O}'s new job at {company}?",
                "~What does {O} do now?",
                "~{O} switched jobs, right? What's {Pp} role now?",
            ],
            "boss": [
                "Who is {O}'s manager at the new job?",
                "What's {O}'s new manager like?",
                "~What's the name of {O}'s new boss?",
                "~What's {O}'s supervisor like at the new place?",
            ],
            "commute": [
                "What's {O}'s commute like to the new job?",
                "How long is {O}'s commute these days?",
                "~How does {O} get to work now?",
            ],
            "offer": ["Did {O} get the job at {company}?", "Did {O} get an offer for the job?"],
        },
        when={
            "interview": ["have {Pp} job interview", "~interview at {company}"],
            "start": ["start at {company}", "~begin {Pp} new job"],
            "offer": ["get the job offer", "~get the offer from {company}"],
        },
        events={"offer": "got the offer from {company}", "interview": "interviewed at {company}"},
        bridges=[
            (
                ["interview", "boss"],
                ["Who is {O}'s manager at the place {P} interviewed at on a {day}?"],
            ),
            (["complaint", "role"], ["What was bothering {O} at work before {P} became a {role}?"]),
            (["role", "commute"], ["How does the new {role} get to work?"]),
        ],
        opens=[
            (
                ["complaint", "boss"],
                [
                    "Is {O} happier at work now than before?",
                    "Would {O} want to go back to {Pp} old job?",
                ],
            )
        ],
        worry=["complaint", "interview"],
        names=["company", "boss"],
        mentions=[
            "new job was fine today, nothing exciting",
            "the new job has so many meetings",
            "brb, meeting",
            "payday tomorrow 🙏",
            "had lunch with people from work, nice bunch",
            "so many emails today",
            "{company} onboarding has so many forms",
            "lunch with the {company} people, nice bunch",
        ],
        mentions_after=2,
    )


def illness(c: Picker) -> Thread:
    """A member gets hurt or ill, sees a doctor and recovers."""
    ail, cause, advice, recovery, base = c(
        [
            (
                "sprained my ankle",
                "running for the bus",
                "keep it up and no running for 6 weeks",
                "did my first slow jog today, no pain!",
                "sprain {Pp} ankle",
            ),
            (
                "threw out my back",
                "carrying my friend's couch",
                "physio twice a week and no lifting",
                "back is finally back lol, slept through the night",
                "hurt {Pp} back",
            ),
            (
                "got a nasty flu",
                "probably from the office",
                "rest, fluids and a week off work",
                "can taste food again!!",
                "get sick",
            ),
            (
                "cracked a tooth",
                "on a popcorn kernel of all things",
                "I need a crown. $$$",
                "crown is in, I can chew on both sides again",
                "crack a tooth",
            ),
            (
                "broke my wrist",
                "falling off my bike",
                "cast for five weeks",
                "cast came off today, my arm is so pale",
                "break {Pp} wrist",
            ),
        ]
    )
    ail_sum = ail.replace("my", "{Pp}")
    p = {
        "ail": ail,
        "ail_sum": ail_sum,
        "cause": cause,
        "advice": advice,
        "recovery": recovery,
        "base": base,
    }
    beats = [
        Beat(
            "Health trouble",
            "{O} is not doing great health-wise.",
            "{O} {ail_sum} {cause}.",
            [
                "o: so I {ail} #ail",
                "x: WHAT how|omg how",
                "o: {cause} #cause",
                "x: oh no, feel better|feel better!!",
            ],
        ),
        Beat(
            "Doctor's advice",
            "{O} saw a doctor.",
            "{O}'s doctor advised: {advice}.",
            [
                "x: did you see someone about it?",
                "o: yeah, the doctor told me {advice} #advice",
                "o: so that's fun",
                "x: ugh",
            ],
        ),
        Beat(
            "Recovery",
            "{O} is recovering.",
            "{O} is recovering well.",
            ["x: how are you feeling?", "o: recovery update: {recovery} #recovery", "x: yay!!"],
        ),
    ]
    return Thread(
        "illness",
        "health",
        "{Pp} health",
        p,
        beats,
        asks={
            "cause": ["How did {O} {base}?", "~How did {O} get hurt?"],
            "advice": [
                "What did the doctor tell {O}?",
                "{O} got hurt a while back, what did the doctor tell {Po}?",
                "~What did {O}'s physician recommend?",
            ],
            "recovery": [
                "How is {O}'s recovery going?",
                "Any recovery update from {O}?",
                "~How's {O} doing since {P} {ail_sum}?",
            ],
            "ail": ["~What health problem did {O} have?"],
        },
        when={"ail": ["{base}"]},
        events={"ail": "{ail_sum}", "recovery": "recovered from {Pp} injury"},
        bridges=[(["cause", "advice"], ["What was the doctor's advice after {O} {ail_sum}?"])],
        opens=[
            (
                ["ail", "advice"],
                ["Would {O} have been up for a dance class in the weeks after {P} got hurt?"],
            )
        ],
        worry=["ail"],
        mentions=[
            "still a bit sore today",
            "recovery is slow but the doctor says it's normal",
            "doing the exercises the doc gave me",
            "pharmacy run, brb",
            "feeling better than last week at least",
        ],
    )


def course(c: Picker) -> Thread:
    """A member takes a course: sign-up, the teacher, a struggle and the exam."""
    subject, exam = c(
        [
            ("Spanish", "the oral exam"),
            ("pottery", "the final piece review"),
            ("guitar", "the recital"),
            ("data science", "the capstone presentation"),
            ("driving", "the driving test"),
            ("Japanese", "the JLPT N4"),
            ("first aid", "the practical test"),
        ]
    )
    struggle, struggle_sum = c(
        [
            (
                "I'm the worst in the class and everyone's 19",
                "feeling behind much younger classmates",
            ),
            ("I keep freezing when I have to talk", "freezing up when speaking"),
            ("the homework takes me 5 hours a week", "the heavy homework"),
            ("my hands are covered in blisters", "blistered hands"),
        ]
    )
    p = {
        "subject": subject,
        "exam": exam,
        "schedule": c(
            [
                "tuesdays and thursdays 6 to 8",
                "saturday mornings",
                "every wednesday night",
                "online, three evenings a week",
            ]
        ),
        "teacher": c(
            ["Señora Ibáñez", "Mr. Okafor", "Ms. Lindqvist", "a guy called Pete", "Dr. Hoang"]
        ),
        "quirk": c(
            [
                "makes us sing in the first 10 minutes",
                "brings a huge dog to class",
                "grades everything in green ink",
                "tells the same joke every week",
            ]
        ),
        "struggle": struggle,
        "struggle_sum": struggle_sum,
        "grade": c(
            [
                "passed with 92!!",
                "passed, barely lol",
                "got top marks in the group",
                "passed on the second try",
            ]
        ),
    }
    beats = [
        Beat(
            "Signed up for {subject} classes",
            "{O} signed up for a class.",
            "{O} signed up for {subject} classes, {schedule}.",
            [
                "o: signed up for {subject} classes #signup",
                "o: the {subject} class is {schedule} #schedule",
                "x: look at you learning things|ooh fun",
            ],
        ),
        Beat(
            "{subject} teacher",
            "{O} talked about {Pp} class.",
            "{O} likes {Pp} {subject} teacher, {teacher}.",
            [
                "x: how's class",
                "o: fun! the {subject} teacher is {teacher} #teacher",
                "o: the teacher {quirk} lol #quirk",
                "x: lmao",
            ],
        ),
        Beat(
            "Struggling with {subject}",
            "{O} is finding the class hard.",
            "{O} is struggling in {subject} with {struggle_sum}.",
            [
                "o: ok {subject} is humbling me",
                "o: {subject} is so hard, {struggle} #struggle",
                "x: everyone starts somewhere",
            ],
            open_question="Will {O} pass {exam}?",
        ),
        Beat(
            "{exam} result",
            "{O} got {Pp} result.",
            "{O} {grade_sum} {exam}.",
            [
                "o: {exam} results are in",
                "o: so for {exam}: {grade} #grade",
                "x: LETS GOOO|yesss congrats",
            ],
        ),
    ]
    p["pg_t"] = "she" if p["teacher"] in ("Señora Ibáñez", "Ms. Lindqvist") else "he"
    p["grade_sum"] = "passed"
    return Thread(
        "course",
        "learning",
        "{Pp} {subject} class",
        p,
        beats,
        asks={
            "schedule": [
                "When does {O}'s {subject} class meet?",
                "When is {O}'s {subject} class?",
                "~How often does {O} have lessons?",
            ],
            "teacher": [
                "Who is {O}'s {subject} teacher?",
                "{O} takes {subject} classes, who's {Pp} teacher?",
                "~Who teaches {O}'s course?",
            ],
            "quirk": [
                "What's funny about {O}'s teacher?",
                "~What odd habit does {O}'s instructor have?",
            ],
            "struggle": [
                "What is {O} finding hard about {subject}?",
                "Why is {subject} so hard for {O}?",
                "~Why was {O} frustrated with the course?",
            ],
            "grade": ["How did {O} do on {exam}?", "~Did {O} pass {Pp} course?"],
        },
        when={"signup": ["sign up for {subject} classes"], "grade": ["get {Pp} result for {exam}"]},
        events={"signup": "signed up for {subject} classes", "grade": "got through {exam}"},
        bridges=[
            (
                ["struggle", "grade"],
                ["After all the struggling in class, how did {O} do in the end?"],
            ),
            (["teacher", "grade"], ["How did {O} do in the course {teacher} teaches?"]),
        ],
        opens=[
            (["signup", "struggle"], ["Is {O} the kind of person who likes learning new skills?"])
        ],
        worry=["struggle"],
        names=["teacher"],
        mentions=[
            "{subject} homework time 😩",
            "skipped {subject} this week, felt bad",
            "practiced for {subject} on the bus",
            "class got cancelled tonight",
        ],
    )
