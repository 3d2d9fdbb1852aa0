-- PostgreSQL's 0010 moves it to the one-row-per-revision shape that SQLite took in 0009;
-- this version exists so both sets keep the same numbering.
SELECT 1;
