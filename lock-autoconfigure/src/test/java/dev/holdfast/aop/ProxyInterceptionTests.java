package dev.holdfast.aop;

import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import org.springframework.aop.support.AopUtils;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.holdfast.DistributedLock;
import dev.holdfast.LockConfigurationException;
import dev.holdfast.LockContext;
import dev.holdfast.SingleInstanceScheduled;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Methods that Spring's proxy cannot intercept fail the context instead of running unlocked;
 * {@code spring.aop.proxy-target-class} is respected.
 */
class ProxyInterceptionTests {

	/** Counts evaluations of the SpEL that a hostile property holds. */
	static final AtomicInteger EVALUATIONS = new AtomicInteger();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class))
		.withPropertyValues("holdfast.backend=memory");

	@Test
	void privateMethodFailsTheContext() {
		assertStartupFailure(PrivateMethod.class, PrivateMethod.class.getName() + ".transfer", "is private");
	}

	@Test
	void finalMethodFailsTheContext() {
		assertStartupFailure(FinalMethod.class, FinalMethod.class.getName() + ".transfer", "is final");
	}

	@Test
	void staticMethodFailsTheContext() {
		assertStartupFailure(StaticMethod.class, StaticMethod.class.getName() + ".transfer", "is static");
	}

	@Test
	void asyncMethodReturningAFutureIsLockedAroundItsBodyOnTheExecutor() {
		// Spring's async advisor runs in front of the lock's: the lock wraps the body on the
		// executor, so an @Async method's Future (not a CompletionStage) is not refused
		this.runner.withUserConfiguration(AsyncConfiguration.class).withBean(AsyncExports.class).run((context) -> {
			assertThat(context).hasNotFailed();
			AsyncExports exports = context.getBean(AsyncExports.class);
			java.util.List<java.util.concurrent.Future<String>> calls = new java.util.ArrayList<>();
			for (int i = 0; i < 4; i++) {
				calls.add(exports.export());
			}
			for (java.util.concurrent.Future<String> call : calls) {
				assertThat(call.get(10, java.util.concurrent.TimeUnit.SECONDS)).startsWith("holdfast:export");
			}
			assertThat(exports.maxInside()).as("bodies inside the lock at once").isEqualTo(1);
			assertThat(exports.threads()).isNotEmpty().noneMatch(Thread.currentThread().getName()::equals);
		});
	}

	@org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
	@org.springframework.scheduling.annotation.EnableAsync
	static class AsyncConfiguration {

		@org.springframework.context.annotation.Bean
		java.util.concurrent.Executor taskExecutor() {
			return java.util.concurrent.Executors.newFixedThreadPool(4);
		}

	}

	static class AsyncExports {

		final AtomicInteger inside = new AtomicInteger();

		final AtomicInteger maxInside = new AtomicInteger();

		final java.util.Set<String> threads = java.util.concurrent.ConcurrentHashMap.newKeySet();

		@org.springframework.scheduling.annotation.Async
		@DistributedLock(name = "export", waitTime = "10s")
		public java.util.concurrent.Future<String> export() throws InterruptedException {
			this.threads.add(Thread.currentThread().getName());
			this.maxInside.accumulateAndGet(this.inside.incrementAndGet(), Math::max);
			Thread.sleep(100);
			this.inside.decrementAndGet();
			// done when returned, as Spring's AsyncResult is, and not a CompletionStage
			String key = LockContext.requireLease().key();
			java.util.concurrent.FutureTask<String> done = new java.util.concurrent.FutureTask<>(() -> key);
			done.run();
			return done;
		}

		public int maxInside() {
			return this.maxInside.get();
		}

		public java.util.Set<String> threads() {
			return this.threads;
		}

	}

	@Test
	void classProxiesByDefaultLockEveryPublicMethod() {
		this.runner.withBean(AccountService.class).run((context) -> {
			Accounts accounts = context.getBean(Accounts.class);
			assertThat(AopUtils.isCglibProxy(accounts)).isTrue();
			assertThat(accounts.transfer("a")).isEqualTo("holdfast:transfer:a");
			assertThat(context.getBean(AccountService.class).audit("b")).isEqualTo("holdfast:audit:b");
		});
	}

	@Test
	void proxyTargetClassFalseGivesInterfaceProxiesThatLock() {
		this.runner.withPropertyValues("spring.aop.proxy-target-class=false")
			.withBean(InterfaceOnlyService.class)
			.run((context) -> {
				Accounts accounts = context.getBean(Accounts.class);
				assertThat(AopUtils.isJdkDynamicProxy(accounts)).isTrue();
				assertThat(accounts.transfer("c")).isEqualTo("holdfast:transfer:c");
			});
	}

	@Test
	void bootsAopAutoConfigurationGivesTheSameProxies() {
		ApplicationContextRunner withBootAop = this.runner
			.withConfiguration(AutoConfigurations.of(AopAutoConfiguration.class))
			.withBean(InterfaceOnlyService.class);
		withBootAop.run((context) -> assertThat(AopUtils.isCglibProxy(context.getBean(Accounts.class))).isTrue());
		withBootAop.withPropertyValues("spring.aop.proxy-target-class=false").run((context) -> {
			Accounts accounts = context.getBean(Accounts.class);
			assertThat(AopUtils.isJdkDynamicProxy(accounts)).isTrue();
			assertThat(accounts.transfer("d")).isEqualTo("holdfast:transfer:d");
		});
	}

	@Test
	void methodOnNoInterfaceFailsTheContextWithInterfaceProxies() {
		this.runner.withPropertyValues("spring.aop.proxy-target-class=false")
			.withBean(AccountService.class)
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(findCause(context.getStartupFailure()).getMessage())
					.contains(AccountService.class.getName() + ".audit")
					.contains("no interface")
					.contains("spring.aop.proxy-target-class=false");
			});
	}

	@Test
	void privateSingleInstanceScheduledMethodsStillRunUnderTheirLock() {
		this.runner.withBean(PrivateJob.class).run((context) -> {
			assertThat(context).hasNotFailed();
			PrivateJob job = context.getBean(PrivateJob.class);
			await().until(() -> !job.keys.isEmpty());
			assertThat(job.keys).first().isEqualTo("holdfast:private-job");
		});
	}

	@Test
	void keyParameterThatRendersAsAnIdentityStringFailsTheContext() {
		assertStartupFailure(IdentityKey.class, IdentityKey.class.getName() + ".ship", "identity string");
	}

	@Test
	void keyParameterThatIsARecordHoldingAnIdentityStringFailsTheContext() {
		assertStartupFailure(RecordIdentityKey.class, RecordIdentityKey.class.getName() + ".ship",
				"component parcel");
	}

	@Test
	void recordKeysWithArraysAndSetsLockOneKeyPerValue() {
		this.runner.withBean(RecordKey.class).run((context) -> {
			assertThat(context).hasNotFailed();
			RecordKey bean = context.getBean(RecordKey.class);
			String first = bean.ship(new Shipment(new long[] { 1, 2 }, new HashSet<>(List.of("y", "x"))));
			String second = bean.ship(new Shipment(new long[] { 1, 2 }, new LinkedHashSet<>(List.of("x", "y"))));
			assertThat(first).isEqualTo(second).isEqualTo("holdfast:ship:Shipment%5Bids=%7B1,%202%7D,%20tags=%5Bx,%20y%5D%5D");
		});
	}

	@Test
	void propertyHoldingSpelNeverBecomesKeyCode() {
		String hostile = "T(" + ProxyInterceptionTests.class.getName() + ").EVALUATIONS.incrementAndGet()";
		this.runner.withPropertyValues("lock.hostile=" + hostile).withBean(PlaceholderKey.class).run((context) -> {
			assertThat(context).hasFailed();
			assertThat(findCause(context.getStartupFailure()).getMessage()).contains("${lock.hostile}")
				.contains("not resolved in key");
		});
		this.runner.withPropertyValues("lock.hostile=" + hostile).withBean(PlaceholderName.class).run((context) -> {
			assertThat(context.getBean(PlaceholderName.class).run()).as("the name is the property's text")
				.startsWith("holdfast:T(");
		});
		assertThat(EVALUATIONS).hasValue(0);
	}

	private void assertStartupFailure(Class<?> bean, String method, String problem) {
		this.runner.withBean(bean).run((context) -> {
			assertThat(context).hasFailed();
			LockConfigurationException ex = findCause(context.getStartupFailure());
			assertThat(ex.getMessage()).contains(method).contains(problem);
		});
	}

	private static LockConfigurationException findCause(Throwable failure) {
		Throwable current = failure;
		while (current != null) {
			if (current instanceof LockConfigurationException ex) {
				return ex;
			}
			current = current.getCause();
		}
		throw new AssertionError("No LockConfigurationException in " + failure, failure);
	}

	public interface Accounts {

		@DistributedLock(name = "transfer", key = "#account")
		String transfer(String account);

	}

	public static class InterfaceOnlyService implements Accounts {

		@Override
		public String transfer(String account) {
			return LockContext.requireLease().key();
		}

	}

	public static class AccountService implements Accounts {

		@Override
		public String transfer(String account) {
			return LockContext.requireLease().key();
		}

		@DistributedLock(name = "audit", key = "#account")
		public String audit(String account) {
			return LockContext.requireLease().key();
		}

	}

	public static class PrivateMethod {

		public void run() {
			transfer();
		}

		@DistributedLock
		private void transfer() {
		}

	}

	public static class FinalMethod {

		@DistributedLock
		public final void transfer() {
		}

	}

	public static class StaticMethod {

		@DistributedLock
		public static void transfer() {
		}

	}

	public static class PrivateJob {

		final List<String> keys = new CopyOnWriteArrayList<>();

		@SingleInstanceScheduled(fixedDelay = "1h", name = "private-job")
		private void run() {
			this.keys.add(LockContext.requireLease().key());
		}

	}

	/** An entity whose toString() is Object's. */
	public static class Parcel {

	}

	public static class IdentityKey {

		@DistributedLock(key = "#parcel")
		public void ship(Parcel parcel) {
		}

	}

	public record Shipping(Parcel parcel, String address) {
	}

	public static class RecordIdentityKey {

		@DistributedLock(key = "#shipping")
		public void ship(Shipping shipping) {
		}

	}

	private record Shipment(long[] ids, Set<String> tags) {
	}

	public static class RecordKey {

		@DistributedLock(name = "ship", key = "#shipment")
		public String ship(Object shipment) {
			return LockContext.requireLease().key();
		}

	}

	public static class PlaceholderKey {

		@DistributedLock(key = "${lock.hostile}")
		public void run() {
		}

	}

	public static class PlaceholderName {

		@DistributedLock(name = "${lock.hostile}")
		public String run() {
			return LockContext.requireLease().key();
		}

	}

}
