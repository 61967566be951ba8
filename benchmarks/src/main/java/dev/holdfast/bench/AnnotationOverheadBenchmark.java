package dev.holdfast.bench;

import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.memory.InMemoryLockBackend;

/**
 * The cost of {@code @DistributedLock} over calling {@code LockTemplate} directly, on the memory
 * backend so that no network time hides it: the same lock (name, options; with and without a
 * SpEL key) taken and released through the proxy and through the template.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class AnnotationOverheadBenchmark {

	private DefaultLockTemplate template;

	private HoldfastClients.LockedService service;

	private final String key = "order-42";

	@Setup(Level.Trial)
	public void setUp() {
		this.template = HoldfastClients.template(new InMemoryLockBackend());
		this.service = HoldfastClients.proxy(this.template);
	}

	@TearDown(Level.Trial)
	public void tearDown() {
		this.template.close();
	}

	@Benchmark
	public Object template() {
		return this.template.executeLocked("bench", null, HoldfastClients.ONE_ATTEMPT, () -> this);
	}

	@Benchmark
	public Object annotation() {
		return this.service.fixed();
	}

	@Benchmark
	public Object templateWithKey() {
		return this.template.executeLocked("bench", this.key, HoldfastClients.ONE_ATTEMPT, () -> this.key);
	}

	@Benchmark
	public Object annotationWithKey() {
		return this.service.run(this.key);
	}

}
