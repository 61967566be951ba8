package dev.holdfast.bench;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.profile.InternalProfiler;
import org.openjdk.jmh.results.AggregationPolicy;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.ScalarResult;

/**
 * A JMH profiler (it runs in the fork) that adds, per iteration, the CPU time the contender's
 * servers ({@link ServerCpu}) and the fork's JVM (the client: its threads, GC, JIT) spent, divided
 * by all operations of the iteration: {@code server.us/op} and {@code client.us/op}; and the JIT
 * compilation time of the iteration ({@code jit.ms}), which shows whether the warmup was long enough.
 */
public final class ServerCpuProfiler implements InternalProfiler {

	static final String SERVER = "server.us/op";

	static final String CLIENT = "client.us/op";

	/** JIT compilation time during the iteration: should be near 0 once the setup warmed up. */
	static final String JIT = "jit.ms";

	private long server;

	private long client;

	private long jit;

	@Override
	public String getDescription() {
		return "CPU time of the contender's servers and of this JVM, per operation";
	}

	@Override
	public void beforeIteration(BenchmarkParams benchmark, IterationParams iteration) {
		this.server = ServerCpu.nanos(contender(benchmark));
		this.client = ServerCpu.processNanos();
		this.jit = compilationMillis();
	}

	@Override
	public Collection<? extends Result> afterIteration(BenchmarkParams benchmark, IterationParams iteration,
			IterationResult result) {
		long server = ServerCpu.nanos(contender(benchmark));
		long client = ServerCpu.processNanos();
		long operations = result.getMetadata().getAllOps();
		List<Result> results = new ArrayList<>();
		add(results, SERVER, ServerCpu.microsPerOp(this.server, server, operations));
		add(results, CLIENT, ServerCpu.microsPerOp(this.client, client, operations));
		long jit = compilationMillis();
		if (jit >= 0 && this.jit >= 0) {
			results.add(new ScalarResult(JIT, jit - this.jit, "ms", AggregationPolicy.AVG));
		}
		return results;
	}

	private static long compilationMillis() {
		var jit = java.lang.management.ManagementFactory.getCompilationMXBean();
		return (jit != null && jit.isCompilationTimeMonitoringSupported()) ? jit.getTotalCompilationTime() : -1;
	}

	private static void add(List<Result> results, String label, double micros) {
		if (!Double.isNaN(micros)) {
			results.add(new ScalarResult(label, micros, "µs/op", AggregationPolicy.AVG));
		}
	}

	private static String contender(BenchmarkParams benchmark) {
		String contender = benchmark.getParam("contender");
		return (contender != null) ? contender : "";
	}

}
