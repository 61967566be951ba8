package dev.holdfast.bench;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.holdfast.redis.RedisLockBackend;
import dev.holdfast.redis.ReplicaAcks;
import dev.holdfast.test.server.RedisServer;

/**
 * What {@code holdfast.redis.replicas-to-ack} costs: uncontended acquire + release through
 * {@code LockTemplate} on a primary with one replica (both started by the benchmark, no
 * persistence), with {@code replicasToAck} 0 (the default) and 1 ({@code WAIT 1} after each
 * acquisition). Compare the two scores of one run: the ratio is the price of waiting for the
 * replica.
 * <p>
 * Run: {@code java -cp benchmarks/target/benchmarks.jar org.openjdk.jmh.Main ReplicaAckBenchmark}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class ReplicaAckBenchmark {

	/** Replicas that must acknowledge each acquisition. */
	@Param({ "0", "1" })
	public int replicasToAck;

	private RedisServer primary;

	private RedisServer replica;

	private LockClient client;

	@Setup(Level.Trial)
	public void setUp() throws Exception {
		this.primary = RedisServer.startWith(List.of("--repl-diskless-sync-delay", "0"));
		this.replica = RedisServer.startReplicaOf(this.primary);
		LettuceConnectionFactory factory = new LettuceConnectionFactory(
				new RedisStandaloneConfiguration("127.0.0.1", this.primary.port()),
				LettuceClientConfiguration.builder().commandTimeout(Duration.ofSeconds(5)).build());
		factory.afterPropertiesSet();
		factory.start();
		RedisLockBackend backend = RedisLockBackend.of(factory, RedisLockBackend.DEFAULT_CHANNEL,
				new ReplicaAcks(this.replicasToAck, Duration.ofSeconds(1)));
		this.client = HoldfastClients.templateClient(HoldfastClients.template(backend), () -> {
			backend.close();
			factory.destroy();
		});
		this.client.lockUnlock("warm-" + Long.toHexString(ThreadLocalRandom.current().nextLong()));
	}

	@TearDown(Level.Trial)
	public void tearDown() throws Exception {
		this.client.close();
		this.replica.close();
		this.primary.close();
	}

	@Benchmark
	public void lockUnlock(UncontendedBenchmark.ThreadKey key) throws Exception {
		this.client.lockUnlock(key.key);
	}

}
