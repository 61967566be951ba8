package dev.holdfast.aop;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.FutureTask;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.publisher.Mono;

import org.springframework.aop.framework.ProxyFactory;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.util.StringUtils;

import dev.holdfast.DistributedLock;
import dev.holdfast.Lease;
import dev.holdfast.LockContext;
import dev.holdfast.LockNotAcquiredException;
import dev.holdfast.LockOptions;
import dev.holdfast.OnLocked;
import dev.holdfast.ReactiveLockContext;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.memory.InMemoryLockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
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
				.withMessageContaining("holdfast:orders:******#")
				.satisfies((ex) -> assertThat(ex.getLockKey()).isEqualTo("holdfast:orders:9"));
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

	@Test
	void keyThatRendersAsAnIdentityStringFailsTheCall() {
		assertThatIllegalArgumentException().isThrownBy(() -> this.service.entity(new Entity("3")))
			.withMessageContaining("Service.entity")
			.withMessageContaining("\"#entity\"")
			.withMessageContaining(Entity.class.getName())
			.withMessageContaining("key = \"#entity.id\"");
		assertThat(this.target.calls).as("the method did not run").isEmpty();
	}

	@Test
	void recordHoldingAnIdentityStringFailsTheCall() {
		assertThatIllegalArgumentException().isThrownBy(() -> this.service.entity(new Delivery(new Entity("3"), "x")))
			.withMessageContaining("Service.entity")
			.withMessageContaining("\"#entity\"")
			.withMessageContaining("gave a " + Delivery.class.getName() + " holding a " + Entity.class.getName())
			.withMessageContaining("override toString() in Entity");
		assertThat(this.target.calls).as("the method did not run").isEmpty();
	}

	@Test
	void templateRefusesIdentityKeysToo() {
		assertThatIllegalArgumentException()
			.isThrownBy(() -> this.template.tryAcquire("orders", new Entity("9"), LockOptions.defaults()))
			.withMessageContaining("'orders'")
			.withMessageContaining(Entity.class.getName());
		assertThatIllegalArgumentException().isThrownBy(
				() -> this.template.executeLocked("orders", new Entity("9"), LockOptions.defaults(), () -> "ran"));
		assertThat(this.template.tryAcquireAsync("orders", new Entity("9"), LockOptions.defaults()))
			.isCompletedExceptionally();
	}

	@Test
	void lambdasArraysAndProxiesAreJudgedByWhatTheyRender() {
		Runnable lambda = () -> {
		};
		assertThatIllegalArgumentException().isThrownBy(() -> this.service.entity(lambda))
			.withMessageContaining("Service.entity");
		assertThatIllegalArgumentException().isThrownBy(() -> this.service.all("a", new Entity("4")))
			.withMessageContaining("#root.args");
		assertThatIllegalArgumentException().isThrownBy(() -> this.service.entity(java.util.List.of(new Entity("5"))));
		// a class proxy and an interface proxy of an entity both render the entity's identity string
		ProxyFactory classProxy = new ProxyFactory(new Entity("6"));
		classProxy.setProxyTargetClass(true);
		assertThatIllegalArgumentException().isThrownBy(() -> this.service.entity(classProxy.getProxy()));
		ProxyFactory interfaceProxy = new ProxyFactory(new Entity("7"));
		interfaceProxy.addInterface(Runnable.class);
		assertThatIllegalArgumentException().isThrownBy(() -> this.service.entity(interfaceProxy.getProxy()));
		assertThat(this.target.calls).isEmpty();
	}

	@Test
	void valuesWithTheirOwnStringAreKeys() {
		assertThat(this.service.entity(new Order("8"))).isEqualTo("holdfast:entities:Order%5Bid=8%5D");
		assertThat(this.service.entity(OnLocked.SKIP)).isEqualTo("holdfast:entities:SKIP");
		assertThat(this.service.entity(java.util.List.of("a", 1))).isEqualTo("holdfast:entities:%5Ba,%201%5D");
		assertThat(this.service.entity(new int[] { 1, 2 })).isEqualTo("holdfast:entities:%7B1,%202%7D");
	}

	@Test
	void selfInvocationIsNamedWhenTheLeaseIsMissing() {
		assertThatExceptionOfType(IllegalStateException.class).isThrownBy(this.service::callsItself)
			.withMessageContaining(Service.class.getName() + ".locked")
			.withMessageContaining("self-invocation")
			.withMessageContaining("WITHOUT the lock");
		assertThatExceptionOfType(IllegalStateException.class).isThrownBy(LockContext::requireLease)
			.withMessageContaining("@DistributedLock")
			.withMessageContaining("this.method()");
		assertThatExceptionOfType(IllegalStateException.class)
			.isThrownBy(() -> dev.holdfast.ReactiveLockContext.requireLease().block())
			.withMessageContaining("self-invocation");
	}

	@Test
	void proxyWithoutATargetIsLocked() {
		ProxyFactory factory = new ProxyFactory();
		factory.addInterface(Repository.class);
		LockOperationSource operations = new LockOperationSource(null);
		factory.addAdvisor(new DistributedLockAdvisor(operations,
				new DistributedLockInterceptor(new LockAspectSupport(operations, this.template, null)), 0));
		// the advice that implements the interface, as in repository proxies: there is no target
		factory.addAdvice((org.aopalliance.intercept.MethodInterceptor) (invocation) -> LockContext.requireLease()
			.key());
		Repository repository = (Repository) factory.getProxy();
		assertThat(repository.save("10")).isEqualTo("holdfast:repository:10");
		assertThat(this.other.tryAcquire("repository", "10", LockOptions.defaults())).as("released after return")
			.isPresent()
			.get()
			.satisfies(Lease::close);
	}

	@Test
	void methodDeclaringObjectHoldsTheLockUntilTheStageItReturnsCompletes() {
		// before: the lock was released when the method returned the stage, with the work still running
		CompletableFuture<String> work = new CompletableFuture<>();
		CompletableFuture<?> result = (CompletableFuture<?>) this.service.untyped(work);
		assertThat(this.other.tryAcquire("untyped", null, LockOptions.defaults())).as("held while the stage runs")
			.isEmpty();
		work.complete("done");
		assertThat(result.join()).isEqualTo("done");
		assertThat(this.other.tryAcquire("untyped", null, LockOptions.defaults())).as("released once it completed")
			.isPresent()
			.get()
			.satisfies(Lease::close);
		assertThat(this.service.untyped("plain")).isEqualTo("plain");
		assertThat(this.other.tryAcquire("untyped", null, LockOptions.defaults())).isPresent().get().satisfies(Lease::close);
	}

	@Test
	void methodDeclaringObjectReturnsTheStageOfItsOwnClassAndHoldsTheLockUntilItCompletes() {
		// a caller of an Object method may cast to the class it knows: the stage is not replaced
		OwnFuture<String> work = new OwnFuture<>();
		assertThat(this.service.untyped(work)).isSameAs(work);
		assertThat(this.other.tryAcquire("untyped", null, LockOptions.defaults())).as("held while the stage runs")
			.isEmpty();
		work.complete("done");
		await().atMost(java.time.Duration.ofSeconds(5))
			.until(() -> this.other.tryAcquire("untyped", null, LockOptions.defaults()).map((lease) -> {
				lease.close();
				return true;
			}).orElse(false));
	}

	static final class OwnFuture<T> extends CompletableFuture<T> {

	}

	@Test
	@ExtendWith(OutputCaptureExtension.class)
	void methodDeclaringObjectThatReturnsAFutureOrAStreamWarnsOncePerMethod(CapturedOutput output) {
		this.service.untyped(new FutureTask<>(() -> "x"));
		this.service.untyped(new FutureTask<>(() -> "y"));
		this.service.untypedToo(Stream.of("z"));
		this.service.untypedThree(Mono.just("m"));
		assertThat(StringUtils.countOccurrencesOf(output.getOut(), Service.class.getName() + ".untyped "))
			.as("one WARN for untyped")
			.isOne();
		assertThat(output).contains("WARN")
			.contains(FutureTask.class.getName())
			.contains("declare the return type CompletableFuture/CompletionStage, or a Mono/Flux")
			.contains(Service.class.getName() + ".untypedToo ")
			.contains("return a List, or consume the stream inside the method")
			.contains(Service.class.getName() + ".untypedThree returned a reactor.core.publisher.Mono");
	}

	/** Whether another instance cannot take the lock "closes" now. */
	private boolean closesHeldElsewhere() {
		return this.other.tryAcquire("closes", null, LockOptions.defaults()).map((lease) -> {
			lease.close();
			return false;
		}).orElse(true);
	}

	@Test
	void closingTheContextLeaseInsideTheMethodEndsOnlyItsHold() {
		// before: closing it released the lock, and another instance took it while the method still ran
		assertThat(this.service.closesItsLease(this::closesHeldElsewhere)).as("still held after the close").isTrue();
		assertThat(closesHeldElsewhere()).as("released when the method returned").isFalse();
	}

	@Test
	void closingTheContextLeaseInsideAFutureMethodEndsOnlyItsHold() {
		CompletableFuture<Boolean> work = new CompletableFuture<>();
		CompletableFuture<Boolean> result = this.service.closesItsLeaseLater(work);
		assertThat(closesHeldElsewhere()).as("held while the stage runs").isTrue();
		work.complete(true);
		assertThat(result.join()).isTrue();
		assertThat(closesHeldElsewhere()).as("released when the stage completed").isFalse();
	}

	@Test
	void closingTheReactiveContextLeaseEndsOnlyItsHold() {
		assertThat(this.service.closesItsReactiveLease(this::closesHeldElsewhere).block())
			.as("held after the close")
			.isTrue();
		assertThat(closesHeldElsewhere()).as("released when the publisher completed").isFalse();
	}

	interface Repository {

		@DistributedLock(name = "repository", key = "#p0")
		String save(String id);

	}

	private record Delivery(Entity entity, String address) {
	}

	record Order(String id) {
	}

	/** An entity whose toString() is Object's. */
	static class Entity {

		final String id;

		Entity(String id) {
			this.id = id;
		}

		public String getId() {
			return this.id;
		}

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

		@DistributedLock(name = "entities", key = "#entity")
		public String entity(Object entity) {
			this.calls.add("entity");
			return LockContext.requireLease().key();
		}

		@DistributedLock(name = "all", key = "#root.args")
		public String all(String first, Object second) {
			this.calls.add("all");
			return LockContext.requireLease().key();
		}

		public String callsItself() {
			return locked();
		}

		@DistributedLock(name = "locked")
		public String locked() {
			return LockContext.requireLease().key();
		}

		@DistributedLock(name = "closes")
		public boolean closesItsLease(java.util.function.BooleanSupplier heldElsewhere) {
			try (Lease lease = LockContext.requireLease()) {
				assertThat(lease.fencingToken()).isPositive();
			}
			return heldElsewhere.getAsBoolean();
		}

		@DistributedLock(name = "closes")
		public CompletableFuture<Boolean> closesItsLeaseLater(CompletableFuture<Boolean> work) {
			LockContext.requireLease().close();
			return work;
		}

		@DistributedLock(name = "closes")
		public Mono<Boolean> closesItsReactiveLease(java.util.function.BooleanSupplier heldElsewhere) {
			return ReactiveLockContext.requireLease()
				.doOnNext(Lease::close)
				.map((lease) -> heldElsewhere.getAsBoolean());
		}

		@DistributedLock(name = "untyped")
		public Object untyped(Object result) {
			return result;
		}

		@DistributedLock(name = "untypedToo")
		public <T> T untypedToo(T result) {
			return result;
		}

		@DistributedLock(name = "untypedThree")
		public Object untypedThree(Object result) {
			return result;
		}

		@DistributedLock(name = "token", leaseTime = "10s")
		public long fencingToken() {
			return LockContext.requireLease().fencingToken();
		}

	}

}
