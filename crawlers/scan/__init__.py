"""scan: read a range and decide what it holds (the range reader, flow accounting, the balance proof, call
traces, the sparse path). Returns values and holds, never writes; imports chain and decode only."""
