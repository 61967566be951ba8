package dev.holdfast.aop;

import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import reactor.core.publisher.Mono;

import org.springframework.util.ReflectionUtils;

import dev.holdfast.DistributedLock;
import dev.holdfast.DistributedSemaphore;
import dev.holdfast.LockConfigurationException;
import dev.holdfast.OnLocked;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

class LockOperationSourceTests {

	private final LockOperationSource source = new LockOperationSource(
			(value) -> value.replace("${lock.wait}", "250ms").replace("${lock.name}", "resolved-name"));

	@Test
	void defaultNameIsSimpleClassNameAndMethod() {
		LockOperation operation = operation("plain");
		assertThat(operation.name()).isEqualTo("Subject.plain");
		assertThat(operation.keyExpression()).isNull();
		assertThat(operation.options().getWaitTime()).isNull();
		assertThat(operation.onLocked()).isEqualTo(OnLocked.THROW);
	}

	@Test
	void placeholdersAreResolvedInNameAndDurations() {
		LockOperation operation = operation("placeholders");
		assertThat(operation.name()).isEqualTo("resolved-name");
		assertThat(operation.options().getWaitTime()).isEqualTo(Duration.ofMillis(250));
		assertThat(operation.options().getLeaseTime()).isEqualTo(Duration.ofSeconds(5));
	}

	@Test
	void anAnnotationOnAnInterfaceOrSuperclassMethodLocksItsOverride() throws Exception {
		// What @Inherited cannot do for methods: the lookup searches the method's hierarchy.
		Method fromInterface = Fulfilment.class.getMethod("fulfil", String.class);
		assertThat(this.source.getOperation(fromInterface, Fulfilment.class).name()).isEqualTo("fulfil");
		Method fromSuperclass = Fulfilment.class.getMethod("refund", String.class);
		assertThat(this.source.getOperation(fromSuperclass, Fulfilment.class).name()).isEqualTo("refund");
	}

	@Test
	void composedAnnotationsWork() {
		assertThat(operation("composed").name()).isEqualTo("composed-lock");
	}

	@Test
	void notAnnotatedIsNull() throws Exception {
		assertThat(this.source.getOperation(Subject.class.getMethod("toString"), Subject.class)).isNull();
	}

	@Test
	void malformedExpressionNamesMethodAndExpression() {
		assertThatExceptionOfType(LockConfigurationException.class).isThrownBy(() -> operation("malformed"))
			.withMessageContaining(Subject.class.getName() + ".malformed")
			.withMessageContaining("#order.")
			.satisfies((ex) -> assertThat(ex.getAction()).contains("key"));
	}

	@Test
	void unknownVariableNamesTheParameters() {
		assertThatExceptionOfType(LockConfigurationException.class).isThrownBy(() -> operation("typo", Map.class))
			.withMessageContaining("#ordr")
			.withMessageContaining("[order]");
	}

	@Test
	void positionalAndRootReferencesAreAccepted() {
		assertThat(operation("positional", String.class, int.class).keyExpressionText())
			.isEqualTo("#p0 + #a1 + #root.args.length");
	}

	@Test
	void badDurationNamesAttributeAndValue() {
		assertThatExceptionOfType(LockConfigurationException.class).isThrownBy(() -> operation("badDuration"))
			.withMessageContaining("waitTime = \"5 parsecs\"")
			.withMessageContaining("badDuration");
	}

	@Test
	void zeroLeaseTimeIsRejected() {
		assertThatExceptionOfType(LockConfigurationException.class).isThrownBy(() -> operation("zeroLease"))
			.withMessageContaining("leaseTime");
	}

	@Test
	void leaseTimeUnderOneMillisecondIsRejected() {
		// before: 500us was positive and accepted; backends count milliseconds and stored 0
		assertThatExceptionOfType(LockConfigurationException.class).isThrownBy(() -> operation("microLease"))
			.withMessageContaining("leaseTime '500us'")
			.withMessageContaining("at least 1ms");
	}

	@Test
	void skipOnPrimitiveReturnIsRejected() {
		assertThatExceptionOfType(LockConfigurationException.class).isThrownBy(() -> operation("skipPrimitive"))
			.withMessageContaining("SKIP")
			.withMessageContaining("int");
	}

	@Test
	void operationsAreResolvedOnce() {
		assertThat(operation("plain")).isSameAs(operation("plain"));
	}

	@Test
	void keyOfAParameterWhoseTypeRendersAnIdentityStringFailsAtStartup() {
		assertThatExceptionOfType(LockConfigurationException.class)
			.isThrownBy(() -> operation("identityByName", Entity.class))
			.withMessageContaining(Subject.class.getName() + ".identityByName")
			.withMessageContaining("key = \"#entity\"")
			.withMessageContaining(Entity.class.getTypeName())
			.satisfies((ex) -> assertThat(ex.getAction()).contains("key = \"#entity.id\""));
		assertThatExceptionOfType(LockConfigurationException.class)
			.isThrownBy(() -> operation("identityByPosition", String.class, Entity[].class))
			.withMessageContaining("key = \"#p1\"");
	}

	@Test
	void keyOfARecordParameterWithAnIdentityComponentFailsAtStartup() {
		assertThatExceptionOfType(LockConfigurationException.class)
			.isThrownBy(() -> operation("recordWithEntity", ReserveCommand.class))
			.withMessageContaining(Subject.class.getName() + ".recordWithEntity")
			.withMessageContaining("key = \"#command\"")
			.withMessageContaining(ReserveCommand.class.getTypeName())
			.withMessageContaining("component customer")
			.withMessageContaining(Entity.class.getTypeName())
			.withMessageContaining("identity string")
			.satisfies((ex) -> assertThat(ex.getAction()).contains("key = \"#command.customer.id\""));
	}

	@Test
	void recordParametersWhoseComponentsRenderTheirValuesAreAccepted() {
		assertThat(operation("recordWithArray", Batch.class)).isNotNull();
	}

	@Test
	void parametersWhoseClassDecidesAtTheCallAreAccepted() {
		assertThat(operation("anyObject", Object.class)).isNotNull();
		assertThat(operation("anInterface", Runnable.class)).isNotNull();
		assertThat(operation("anAbstractClass", AbstractEntity.class)).isNotNull();
		assertThat(operation("aPropertyOfTheEntity", Entity.class)).isNotNull();
	}

	@Test
	void placeholderInAKeyFailsInsteadOfBecomingCode() {
		assertThatExceptionOfType(LockConfigurationException.class).isThrownBy(() -> operation("keyPlaceholder"))
			.withMessageContaining("${lock.name}")
			.withMessageContaining("not resolved in key")
			.satisfies((ex) -> assertThat(ex.getAction()).contains("name"));
	}

	@Test
	void futureThatIsNotACompletionStageFailsAtStartup() {
		// before: accepted, and the lock was released when the method returned its future
		assertThatExceptionOfType(LockConfigurationException.class).isThrownBy(() -> operation("plainFuture"))
			.withMessageContaining(Subject.class.getName() + ".plainFuture")
			.withMessageContaining(Future.class.getName())
			.satisfies((ex) -> assertThat(ex.getAction()).contains("Return CompletableFuture/CompletionStage, or a Mono/Flux"));
		assertThatExceptionOfType(LockConfigurationException.class).isThrownBy(() -> operation("futureTask"))
			.withMessageContaining(FutureTask.class.getName());
		assertThat(operation("completableFuture")).isNotNull();
	}

	@Test
	void reactiveTypeWithoutReactorFailsAtStartup() {
		// before: Spring adapts RxJava and Mutiny types without Reactor, but Holdfast locks them through
		// Reactor: the lock was released when the method returned, before anything subscribed
		LockOperationSource withoutReactor = new LockOperationSource(null, false, true);
		Method mono = ReflectionUtils.findMethod(Subject.class, "mono");
		assertThatExceptionOfType(LockConfigurationException.class)
			.isThrownBy(() -> withoutReactor.getOperation(mono, Subject.class))
			.withMessageContaining(Subject.class.getName() + ".mono returns " + Mono.class.getName())
			.withMessageContaining("Reactor, which is not on the class path")
			.satisfies((ex) -> assertThat(ex.getAction()).contains("io.projectreactor:reactor-core"));
		Method stage = ReflectionUtils.findMethod(Subject.class, "completableFuture");
		assertThat(withoutReactor.getOperation(stage, Subject.class)).as("a stage needs no Reactor").isNotNull();
		assertThat(operation("mono").reactiveAdapter()).as("with Reactor").isNotNull();
	}

	@Test
	void aReactiveSemaphoreMethodWithoutReactorFailsSayingItCannotTakeAPermit() {
		// before: the error asked to add reactor-core, and with it the method failed again, otherwise
		LockOperationSource withoutReactor = new LockOperationSource(null, false, false);
		Method mono = ReflectionUtils.findMethod(Subject.class, "monoSemaphore");
		assertThatExceptionOfType(LockConfigurationException.class)
			.isThrownBy(() -> withoutReactor.getOperation(mono, Subject.class))
			.withMessageContaining("cannot take a permit yet")
			.satisfies((ex) -> assertThat(ex.getAction()).contains("LockTemplate.acquirePermit"));
	}

	@Test
	void streamFailsAtStartup() {
		assertThatExceptionOfType(LockConfigurationException.class).isThrownBy(() -> operation("stream"))
			.withMessageContaining(Subject.class.getName() + ".stream")
			.withMessageContaining(Stream.class.getName())
			.satisfies((ex) -> assertThat(ex.getAction()).contains("Return a List, or consume the stream inside the method"));
		assertThatExceptionOfType(LockConfigurationException.class).isThrownBy(() -> operation("intStream"))
			.withMessageContaining(IntStream.class.getName());
	}

	@Test
	void parameterNamesInAClassCompiledWithoutThemFailAtStartup(@TempDir Path dir) throws Exception {
		// before: accepted, and '#orderId' was null at every call, so all orders shared the key "order-null"
		Class<?> orders = compileWithoutParameterNames(dir, "Orders", """
				package dev.holdfast.aop.noparams;

				public class Orders {

					@dev.holdfast.DistributedLock(name = "order", key = "'order-' + #orderId")
					public void ship(long orderId) {
					}

					@dev.holdfast.DistributedLock(name = "order", key = "#p0 + #a1 + #root.args.length + #root.methodName")
					public void positional(long orderId, String tenant) {
					}

				}
				""");
		Method ship = orders.getMethod("ship", long.class);
		assertThat(ship.getParameters()[0].isNamePresent()).as("compiled without -parameters").isFalse();
		assertThatExceptionOfType(LockConfigurationException.class).isThrownBy(() -> this.source.getOperation(ship, orders))
			.withMessageContaining("dev.holdfast.aop.noparams.Orders.ship")
			.withMessageContaining("#orderId")
			.satisfies((ex) -> assertThat(ex.getAction())
				.containsIgnoringCase("compile with -parameters (Spring Boot's parent does), or use #p0/#a0"));
		assertThat(this.source.getOperation(orders.getMethod("positional", long.class, String.class), orders))
			.isNotNull();
	}

	/** Compiles {@code source} as javac does without {@code -parameters}, and loads the class. */
	private static Class<?> compileWithoutParameterNames(Path dir, String simpleName, String source) throws Exception {
		JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
		Path file = dir.resolve(simpleName + ".java");
		Files.writeString(file, source);
		String classpath = Path.of(DistributedLock.class.getProtectionDomain().getCodeSource().getLocation().toURI())
			.toString();
		int exit = compiler.run(null, null, null, "--release", "17", "-proc:none", "-classpath", classpath, "-d",
				dir.toString(), file.toString());
		assertThat(exit).as("compiled").isZero();
		URLClassLoader loader = new URLClassLoader(new URL[] { dir.toUri().toURL() },
				LockOperationSourceTests.class.getClassLoader());
		String packageName = source.substring("package ".length(), source.indexOf(';'));
		return loader.loadClass(packageName + "." + simpleName);
	}

	private LockOperation operation(String name, Class<?>... types) {
		Method method = ReflectionUtils.findMethod(Subject.class, name, types);
		assertThat(method).as(name).isNotNull();
		return this.source.getOperation(method, Subject.class);
	}

	interface Fulfilling {

		@DistributedLock(name = "fulfil", key = "#order")
		void fulfil(String order);

	}

	abstract static class Refunding {

		@DistributedLock(name = "refund", key = "#order")
		public abstract void refund(String order);

	}

	static class Fulfilment extends Refunding implements Fulfilling {

		@Override
		public void fulfil(String order) {
		}

		@Override
		public void refund(String order) {
		}

	}

	@Retention(RetentionPolicy.RUNTIME)
	@DistributedLock(name = "composed-lock", waitTime = "1s")
	@interface ComposedLock {

	}

	static class Entity {

		public String getId() {
			return "1";
		}

	}

	abstract static class AbstractEntity {

	}

	record ReserveCommand(Entity customer, String sku) {
	}

	record Batch(String tenant, long[] orderIds) {
	}

	static class Subject {

		@DistributedSemaphore(name = "exports", permits = 2)
		public Mono<Void> monoSemaphore() {
			return Mono.empty();
		}

		@DistributedLock
		public void plain() {
		}

		@DistributedLock(name = "${lock.name}", waitTime = "${lock.wait}", leaseTime = "PT5S")
		public void placeholders() {
		}

		@ComposedLock
		public void composed() {
		}

		@DistributedLock(key = "#order.")
		public void malformed() {
		}

		@DistributedLock(key = "#ordr['id']")
		public void typo(Map<String, Object> order) {
		}

		@DistributedLock(key = "#p0 + #a1 + #root.args.length")
		public void positional(String a, int b) {
		}

		@DistributedLock(waitTime = "5 parsecs")
		public void badDuration() {
		}

		@DistributedLock(leaseTime = "0s")
		public void zeroLease() {
		}

		@DistributedLock(leaseTime = "500us")
		public void microLease() {
		}

		@DistributedLock(onLocked = OnLocked.SKIP)
		public int skipPrimitive() {
			return 1;
		}

		@DistributedLock(key = "#entity")
		public void identityByName(Entity entity) {
		}

		@DistributedLock(key = "#p1")
		public void identityByPosition(String name, Entity[] entities) {
		}

		@DistributedLock(key = "#command")
		public void recordWithEntity(ReserveCommand command) {
		}

		@DistributedLock(key = "#batch")
		public void recordWithArray(Batch batch) {
		}

		@DistributedLock(key = "#any")
		public void anyObject(Object any) {
		}

		@DistributedLock(key = "#task")
		public void anInterface(Runnable task) {
		}

		@DistributedLock(key = "#base")
		public void anAbstractClass(AbstractEntity base) {
		}

		@DistributedLock(key = "#entity.id")
		public void aPropertyOfTheEntity(Entity entity) {
		}

		@DistributedLock(key = "'${lock.name}' + #root.methodName")
		public void keyPlaceholder() {
		}

		@DistributedLock
		public Future<String> plainFuture() {
			return CompletableFuture.completedFuture("x");
		}

		@DistributedLock
		public FutureTask<String> futureTask() {
			return new FutureTask<>(() -> "x");
		}

		@DistributedLock
		public CompletableFuture<String> completableFuture() {
			return CompletableFuture.completedFuture("x");
		}

		@DistributedLock
		public Mono<String> mono() {
			return Mono.just("x");
		}

		@DistributedLock
		public Stream<String> stream() {
			return Stream.of("x");
		}

		@DistributedLock
		public IntStream intStream() {
			return IntStream.of(1);
		}

	}

}
