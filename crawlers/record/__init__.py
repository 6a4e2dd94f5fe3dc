"""record: the only ORM writers of the crawler tables (cursors, completeness, unexplained inflows, a scanned
block's rows with its cursor). Takes values from scan and prices passed in; imports chain, decode, scan."""
