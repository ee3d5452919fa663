"""A dependency of the fixture: what the note tool writes is formatted here."""


def note_line(text):
    return "note: " + text + "\n"
