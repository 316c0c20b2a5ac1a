package worker_test

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func testutilValue(c prometheus.Collector) float64 { return testutil.ToFloat64(c) }
