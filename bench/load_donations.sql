-- 1,000,000 donations for the API benchmark: one donor with exactly 50 donations (the address below),
-- the rest spread over 200,000 donors with 5 each; user_data and donation_stats consistent with them.
\set ON_ERROR_STOP on
TRUNCATE donation, user_data;
INSERT INTO donation (tx_hash, log_index, address, asset, amount, usd_amount, price, tokens, status,
                      block_number, block_hash, block_time, absent_count, created_at, modified_at)
SELECT '0x' || lpad(to_hex(i), 64, '0'),
       NULL,
       CASE WHEN i <= 50 THEN '0x00000000000000000000000000000000000b0b50'
            ELSE '0x' || lpad(to_hex(1048576 + i % 200000), 40, '0') END,
       (ARRAY['eth', 'usdt', 'usdc'])[1 + i % 3],
       round(0.01 + (i % 997) / 100.0, 8),
       round(20 + (i % 997) * 2.5, 2),
       0.00100,
       (20 + (i % 997) * 2.5) * 1000,
       (CASE WHEN i % 50 = 0 THEN 'unconfirmed' ELSE 'confirmed' END)::donation_status_enum,
       18000000 + i / 4,
       '0x' || lpad(to_hex(18000000 + i / 4), 64, '0'),
       timestamptz '2025-01-01 00:00:00+00' + make_interval(secs => i * 3),
       0, now(), now()
FROM generate_series(1, 1000000) AS i;
INSERT INTO user_data (address, total, tokens, staked, reward, status, created_at, modified_at)
SELECT address, sum(usd_amount), sum(tokens), 0, 0, 'none', now(), now()
FROM donation WHERE status = 'confirmed' GROUP BY address;
UPDATE donation_stats SET total = s.total, tokens = s.tokens
FROM (SELECT sum(usd_amount) AS total, sum(tokens) AS tokens FROM donation WHERE status = 'confirmed') AS s;
ANALYZE donation;
ANALYZE user_data;
SELECT count(*) AS donations, count(DISTINCT address) AS donors FROM donation;
