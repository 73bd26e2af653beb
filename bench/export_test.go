package bench

import hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

type hdrHist = hdrhistogram.Histogram
