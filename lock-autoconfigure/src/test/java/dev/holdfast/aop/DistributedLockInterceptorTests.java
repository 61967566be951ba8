package dev.holdfast.aop;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.aop.framework.ProxyFactory;

import dev.holdfast.DistributedLock;
import dev.holdfast.Lease;
import dev.holdfast.LockContext;
import dev.holdfast.LockNotAcquiredException;
import dev.holdfast.LockOptions;
import dev.holdfast.OnLocked;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.memory.InMemoryLockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

class DistributedLockInterceptorTests {

	private final InMemoryLockBackend backend = new InMemoryLockBackend();

	private final DefaultLockTemplate template = new DefaultLockTemplate(this.backend, LockSettings.defaults());

	/** Another "process" on the same backend. */
	private final DefaultLockTemplate other = new DefaultLockTemplate(this.backend, LockSettings.defaults());

	private final Service target = new Service();

	private final Service service = proxy(this.target);

	@AfterEach
	void close() {
		this.template.close();
		this.other.close();
	}

	private Service proxy(Service target) {
		ProxyFactory factory = new ProxyFactory(target);
		factory.setProxyTargetClass(true);
		LockOperationSource operations = new LockOperationSource(null);
		factory.addAdvisor(new DistributedLockAdvisor(operations,
				new DistributedLockInterceptor(new LockAspectSupport(operations, this.template, null)), 0));
		Service proxy = (Service) factory.getProxy();
		target.self = proxy;
		return proxy;
	}

	@Test
	void methodRunsUnderTheLockOfItsKey() {
		String key = this.service.fulfil(new Order("42"));
		assertThat(key).isEqualTo("holdfast:orders:42");
		assertThat(this.other.tryAcquire("orders", "42", LockOptions.defaults())).as("released after return")
			.isPresent()
			.get()
			.satisfies(Lease::close);
	}

	@Test
	void lockIsHeldWhileTheMethodRuns() {
		boolean heldElsewhere = this.service.check(new Order("7"),
				() -> this.other.tryAcquire("orders", "7", LockOptions.defaults()).isEmpty());
		assertThat(heldElsewhere).isTrue();
	}

	@Test
	void heldLockThrowsByDefault() {
		try (Lease held = this.other.acquire("orders", "9", LockOptions.defaults())) {
			assertThatExceptionOfType(LockNotAcquiredException.class).isThrownBy(() -> this.service.fulfil(new Order("9")))
				.withMessageContaining("holdfast:orders:9");
		}
	}

	@Test
	void heldLockSkipsWithAnEmptyResult() {
		try (Lease held = this.other.acquire("Service.skipped", null, LockOptions.defaults());
				Lease optional = this.other.acquire("Service.skippedOptional", null, LockOptions.defaults());
				Lease future = this.other.acquire("Service.skippedFuture", null, LockOptions.defaults())) {
			assertThat(this.service.skipped()).isNull();
			assertThat(this.service.skippedOptional()).isEmpty();
			assertThat(this.service.skippedFuture().toCompletableFuture().join()).isNull();
			assertThat(this.target.calls).isEmpty();
		}
		assertThat(this.service.skipped()).isEqualTo("ran");
	}

	@Test
	void argumentValuesAreDataNotExpressions() {
		String hostile = "T(java.lang.Runtime).getRuntime().exit(1)";
		assertThat(this.service.fulfil(new Order(hostile))).isEqualTo("holdfast:orders:" + hostile);
		assertThat(this.service.byPosition(hostile, "#{1+1}")).isEqualTo("holdfast:positional:" + hostile + "-%23%7B1+1%7D");
	}

	@Test
	void nullKeyIsAnIllegalArgumentNamingMethodAndExpression() {
		assertThatIllegalArgumentException().isThrownBy(() -> this.service.fulfil(new Order(null)))
			.withMessageContaining("#order.id")
			.withMessageContaining("Service.fulfil");
	}

	@Test
	void nestedCallWithTheSameKeyReenters() {
		assertThat(this.service.outer(new Order("5"))).isEqualTo("holdfast:orders:5");
	}

	@Test
	void leaseIsBoundToTheThreadOnlyWhileTheMethodRuns() {
		assertThat(this.service.fencingToken()).isPositive();
		assertThat(LockContext.currentLease()).isEmpty();
	}

	record Order(String id) {
	}

	static class Service {

		final List<String> calls = new ArrayList<>();

		Service self;

		@DistributedLock(name = "orders", key = "#order.id")
		public String fulfil(Order order) {
			return LockContext.requireLease().key();
		}

		@DistributedLock(name = "orders", key = "#order.id")
		public boolean check(Order order, java.util.function.BooleanSupplier probe) {
			return probe.getAsBoolean();
		}

		@DistributedLock(name = "orders", key = "#order.id")
		public String outer(Order order) {
			return this.self.fulfil(order);
		}

		@DistributedLock(name = "positional", key = "#p0 + '-' + #a1")
		public String byPosition(String first, String second) {
			return LockContext.requireLease().key();
		}

		@DistributedLock(onLocked = OnLocked.SKIP)
		public String skipped() {
			this.calls.add("skipped");
			return "ran";
		}

		@DistributedLock(onLocked = OnLocked.SKIP)
		public Optional<String> skippedOptional() {
			this.calls.add("optional");
			return Optional.of("ran");
		}

		@DistributedLock(onLocked = OnLocked.SKIP)
		public CompletionStage<String> skippedFuture() {
			this.calls.add("future");
			return CompletableFuture.completedFuture("ran");
		}

		@DistributedLock(name = "token", leaseTime = "10s")
		public long fencingToken() {
			return LockContext.requireLease().fencingToken();
		}

	}

}
