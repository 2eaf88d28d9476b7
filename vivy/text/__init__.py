"""Text as Vivy reads it, one home for every room: Discord markup made readable or removed
(:mod:`.markup`), and what a word and a search term are (:mod:`.terms`)."""
