-- Revisions keyed by the match's creation order (issue 19: bytes written per move). Every
-- move adds an entry to the index by match, and an index keyed by the match's id (a random
-- UUID) puts each move's entry on a random leaf: every move dirtied a leaf of its own, written
-- once into the WAL and once more by the checkpoint, about 8 KiB per move. Keyed by `seq`,
-- a number each match takes at creation in order, the entries of the matches being played sit
-- together at the index's end: a batch's moves still dirty a leaf each in the WAL, but the
-- checkpoint writes those few hot leaves once for many transactions.
--
-- `matches.seq`: the match's creation order (its rowid for matches created before this
-- version), unique. `revisions.match_seq` replaces `revisions.match_id`.
--
-- `revisions.recipients`: how many publications the row holds (the outbox backlog counts
-- them without reading the publications). `revisions.publications`: the JSON array as text
-- (rows written before this version), or the same text compressed with LZ4 as a blob (the
-- block format with its length prepended, `lz4_flex::compress_prepend_size`).

ALTER TABLE matches ADD COLUMN seq integer;
UPDATE matches SET seq = rowid;
CREATE UNIQUE INDEX matches_seq ON matches (seq);

CREATE TABLE revisions_by_seq (
    match_seq    integer NOT NULL,
    revision     integer NOT NULL,
    principal    text NULL,
    command_id   blob NULL,
    fingerprint  text NULL,
    instant_ms   integer NOT NULL,
    written_ms   integer NOT NULL,
    recipients   integer NOT NULL,
    entry        text NOT NULL,
    publications blob NOT NULL
);

INSERT INTO revisions_by_seq (match_seq, revision, principal, command_id, fingerprint, instant_ms, written_ms,
                              recipients, entry, publications)
SELECT m.seq, r.revision, r.principal, r.command_id, r.fingerprint, r.instant_ms, r.written_ms,
       json_array_length(r.publications), r.entry, r.publications
FROM revisions AS r
JOIN matches AS m ON m.match_id = r.match_id
ORDER BY m.seq, r.revision;

DROP TABLE revisions;
ALTER TABLE revisions_by_seq RENAME TO revisions;
CREATE INDEX revisions_by_match ON revisions (match_seq, revision, principal, command_id);
