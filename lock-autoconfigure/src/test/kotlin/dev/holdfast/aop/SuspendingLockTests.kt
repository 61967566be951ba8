package dev.holdfast.aop

import dev.holdfast.DistributedLock
import dev.holdfast.DistributedSemaphore
import dev.holdfast.LockConfigurationException
import dev.holdfast.LockContext
import dev.holdfast.LockNotAcquiredException
import dev.holdfast.LockOptions
import dev.holdfast.OnLocked
import dev.holdfast.ReactiveLockContext
import dev.holdfast.SingleInstanceScheduled
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration
import dev.holdfast.core.DefaultLockTemplate
import dev.holdfast.core.LockSettings
import dev.holdfast.memory.InMemoryLockBackend
import dev.holdfast.spi.LockBackend
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Deferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.reactor.awaitSingle
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.assertj.core.api.Assertions.assertThat
import org.assertj.core.api.Assertions.assertThatExceptionOfType
import org.awaitility.Awaitility.await
import org.junit.jupiter.api.Test
import org.springframework.boot.autoconfigure.AutoConfigurations
import org.springframework.boot.test.context.assertj.AssertableApplicationContext
import org.springframework.boot.test.context.runner.ApplicationContextRunner
import reactor.core.publisher.Mono
import java.time.Duration
import java.util.concurrent.ConcurrentLinkedQueue
import java.util.concurrent.CountDownLatch
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicInteger

/**
 * Kotlin suspend functions under `@DistributedLock` and `@SingleInstanceScheduled`, compiled by
 * kotlinc and called through a real application context's proxies on the memory backend. Spring's
 * proxy calls a suspend function as a `Mono` that runs its body; the lock must be held until that
 * body ends, across its suspensions, not only until the function first suspends (its Java
 * return). A second template on the same backend plays another instance of the cluster.
 */
class SuspendingLockTests {

	private val backend = InMemoryLockBackend()

	private val runner = ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration::class.java))
		.withPropertyValues("holdfast.lease-time=$LEASE_MILLIS" + "ms")
		.withBean("sharedBackend", LockBackend::class.java, { backend })

	private fun run(test: (AssertableApplicationContext) -> Unit) =
		runner.withBean(Suspending::class.java).run { context ->
			assertThat(context).hasNotFailed()
			test(context)
		}

	private fun otherInstance() = DefaultLockTemplate(backend, LockSettings.defaults())

	private fun DefaultLockTemplate.isFree(name: String, key: String?): Boolean =
		tryAcquire(name, key, LockOptions.defaults()).map { it.close(); true }.orElse(false)

	@Test
	fun theLockIsHeldUntilTheBodyEndsAcrossItsSuspensions() {
		run { context ->
			val jobs = context.getBean(Suspending::class.java)
			otherInstance().use { other ->
				runBlocking {
					val gate = CompletableDeferred<Unit>()
					// Unconfined, as Spring MVC and WebFlux call suspend functions: the body starts on
					// the thread that subscribes to it
					val call = async(Dispatchers.Unconfined) { jobs.gated("order-1", gate) }
					await().atMost(Duration.ofSeconds(5)).until { jobs.started.get() == 1 }
					// suspended past three lease times: held, renewed
					delay(LEASE_MILLIS * 3)
					assertThat(other.isFree("slow", "order-1")).`as`("held while the body is suspended").isFalse()
					gate.complete(Unit)
					assertThat(call.await()).isEqualTo("done order-1")
				}
				assertThat(other.isFree("slow", "order-1")).`as`("released when the body ended").isTrue()
				assertThat(jobs.bodyThreads).`as`("the body starts off the thread that granted the lock")
					.allMatch { it.startsWith("boundedElastic-") }
			}
		}
	}

	@Test
	fun callsWithOneKeyRunOneAtATime() {
		run { context ->
			val jobs = context.getBean(Suspending::class.java)
			runBlocking(Dispatchers.Default) {
				(1..4).map { async { jobs.counted("order-2") } }.awaitAll()
			}
			assertThat(jobs.ran.get()).isEqualTo(4)
			assertThat(jobs.mostAtOnce.get()).`as`("bodies running at once under one key").isEqualTo(1)
		}
	}

	@Test
	fun theBodyFindsItsLeaseInItsReactorContextAfterASuspension() {
		run { context ->
			val jobs = context.getBean(Suspending::class.java)
			val seen = runBlocking(Dispatchers.Default) { jobs.leaseAfterASuspension("order-3") }
			assertThat(seen).isEqualTo("holdfast:slow:order-3 valid")
		}
	}

	@Test
	fun heldElsewhereSkipReturnsNullAndThrowFails() {
		run { context ->
			val jobs = context.getBean(Suspending::class.java)
			otherInstance().use { other ->
				other.acquire("slow", "order-4", LockOptions.defaults()).use {
					runBlocking {
						assertThat(jobs.skipIfHeld("order-4")).isNull()
						assertThatExceptionOfType(LockNotAcquiredException::class.java)
							.isThrownBy { runBlocking { jobs.slow("order-4", 0) } }
					}
					assertThat(jobs.started.get()).`as`("bodies run without the lock").isZero()
				}
			}
		}
	}

	@Test
	fun aBodyThatThrowsReleasesTheLockAndTheCallerGetsItsException() {
		run { context ->
			val jobs = context.getBean(Suspending::class.java)
			assertThatExceptionOfType(IllegalStateException::class.java)
				.isThrownBy { runBlocking { jobs.failAfterASuspension("order-5") } }
				.withMessage("failed after a suspension")
			otherInstance().use { other -> assertThat(other.isFree("slow", "order-5")).isTrue() }
		}
	}

	@Test
	fun aSuspendFunctionReturningAFlowHoldsTheLockUntilTheFlowEnds() {
		run { context ->
			val jobs = context.getBean(Suspending::class.java)
			otherInstance().use { other ->
				val heldAtEachItem = ConcurrentLinkedQueue<Boolean>()
				val items = runBlocking {
					jobs.items("order-6") { heldAtEachItem.add(!other.isFree("slow", "order-6")) }.toList()
				}
				assertThat(items).containsExactly(1, 2, 3)
				// held while the flow produces (its last items may be read after it ended)
				assertThat(heldAtEachItem).`as`("held at each emission").containsExactly(true, true, true)
				assertThat(other.isFree("slow", "order-6")).`as`("released when the flow ended").isTrue()
			}
		}
	}

	@Test
	fun withoutReactorOrCoroutinesReactorASuspendFunctionFailsAtStartup() {
		val method = Suspending::class.java.declaredMethods.first { it.name == "slow" }
		for (source in listOf(LockOperationSource(null, false, true), LockOperationSource(null, true, false))) {
			assertThatExceptionOfType(LockConfigurationException::class.java)
				.isThrownBy { source.getOperation(method, Suspending::class.java) }
				.withMessageContaining("Suspending.slow is a Kotlin suspend function")
				.satisfies({ assertThat(it.action).contains("kotlinx-coroutines-reactor").contains("kotlin-reflect") })
		}
		assertThat(LockOperationSource(null).getOperation(method, Suspending::class.java)!!.reactiveAdapter())
			.`as`("with both").isNotNull()
	}

	@Test
	fun flowAndDeferredResultsWithoutCoroutinesReactorFailAtStartup() {
		// before: no adapter, so the plain path released the lock when the method returned, before
		// the flow was collected
		val withoutCoroutinesReactor = LockOperationSource(null, true, false)
		for (name in listOf("flow", "deferred")) {
			val method = Results::class.java.declaredMethods.first { it.name == name }
			assertThatExceptionOfType(LockConfigurationException::class.java)
				.isThrownBy { withoutCoroutinesReactor.getOperation(method, Results::class.java) }
				.withMessageContaining("Results.$name returns kotlinx.coroutines.")
				.satisfies({ assertThat(it.action).contains("kotlinx-coroutines-reactor") })
			assertThat(LockOperationSource(null).getOperation(method, Results::class.java)!!.reactiveAdapter())
				.`as`("$name with kotlinx-coroutines-reactor").isNotNull()
		}
	}

	@Test
	fun skipOnANonNullKotlinResultFailsAtStartup() {
		// before: accepted, and a skipped call gave the caller null in a non-null String
		val source = LockOperationSource(null)
		fun operation(name: String) =
			source.getOperation(SkipResults::class.java.declaredMethods.first { it.name == name }, SkipResults::class.java)
		assertThatExceptionOfType(LockConfigurationException::class.java)
			.isThrownBy { operation("nonNull") }
			.withMessageContaining("SkipResults.nonNull uses onLocked = SKIP")
			.withMessageContaining("java.lang.String is not nullable")
			.satisfies({ assertThat(it.action).contains("String?") })
		assertThatExceptionOfType(LockConfigurationException::class.java)
			.isThrownBy { operation("plainNonNull") }
			.withMessageContaining("SkipResults.plainNonNull uses onLocked = SKIP")
		assertThat(operation("nullable")).isNotNull()
		assertThat(operation("plainNullable")).isNotNull()
		assertThat(operation("mono")).isNotNull()
		assertThat(operation("unit")).isNotNull()
		assertThat(operation("items")).isNotNull()
	}

	@Test
	fun aSuspendJobRunsOnItsThreadAndHoldsItsJobLockUntilItsBodyEnds() {
		runner.withBean(SuspendingJob::class.java).run { context ->
			assertThat(context).hasNotFailed()
			val job = context.getBean(SuspendingJob::class.java)
			assertThat(job.suspended.await(10, TimeUnit.SECONDS)).`as`("the job ran and suspended").isTrue()
			otherInstance().use { other ->
				assertThat(other.isFree("suspending-job", null)).`as`("held while the job is suspended").isFalse()
				job.gate.complete(Unit)
				assertThat(job.ended.await(10, TimeUnit.SECONDS)).isTrue()
				await().atMost(Duration.ofSeconds(5)).until { other.isFree("suspending-job", null) }
			}
			assertThat(job.leaseSeen).`as`("LockContext after suspensions").containsExactly("holdfast:suspending-job valid")
			assertThat(job.threads).hasSize(3).allMatch { it.startsWith("holdfast-scheduling-") }.containsOnly(job.threads.first())
		}
	}

	@Test
	fun aSequenceResultFailsAtStartup() {
		val method = Results::class.java.declaredMethods.first { it.name == "numbers" }
		assertThatExceptionOfType(LockConfigurationException::class.java)
			.isThrownBy { LockOperationSource(null).getOperation(method, Results::class.java) }
			.withMessageContaining("Results.numbers returns kotlin.sequences.Sequence")
	}

	@Test
	fun aSuspendSemaphoreFailsAtStartupSayingItCannotTakeAPermit() {
		val method = Results::class.java.declaredMethods.first { it.name == "export" }
		assertThatExceptionOfType(LockConfigurationException::class.java)
			.isThrownBy { LockOperationSource(null).getOperation(method, Results::class.java) }
			.withMessageContaining("Results.export: a method returning a reactive type or a Kotlin suspend function")
			.withMessageContaining("cannot take a permit yet")
	}

	open class Results {

		@DistributedSemaphore(name = "exports", permits = 2)
		open suspend fun export(): Int = 1

		@DistributedLock
		open fun numbers(): Sequence<Int> = generateSequence(1) { it + 1 }

		@DistributedLock
		open fun flow(): Flow<Int> = flow { emit(1) }

		@DistributedLock
		open fun deferred(): Deferred<Int> = CompletableDeferred(1)

	}

	open class Suspending {

		// open: the test reads them through the CGLIB proxy, which only overrides open members
		open val started = AtomicInteger()

		open val ran = AtomicInteger()

		private val running = AtomicInteger()

		open val mostAtOnce = AtomicInteger()

		open val bodyThreads = ConcurrentLinkedQueue<String>()

		@DistributedLock(name = "slow", key = "#id")
		open suspend fun slow(id: String, millis: Long): String {
			started.incrementAndGet()
			delay(millis)
			return "done $id"
		}

		@DistributedLock(name = "slow", key = "#id")
		open suspend fun gated(id: String, gate: CompletableDeferred<Unit>): String {
			bodyThreads.add(Thread.currentThread().name)
			started.incrementAndGet()
			gate.await()
			return "done $id"
		}

		@DistributedLock(name = "counted", key = "#id", waitTime = "10s")
		open suspend fun counted(id: String) {
			val now = running.incrementAndGet()
			mostAtOnce.accumulateAndGet(now, ::maxOf)
			delay(50)
			running.decrementAndGet()
			ran.incrementAndGet()
		}

		@DistributedLock(name = "slow", key = "#id")
		open suspend fun leaseAfterASuspension(id: String): String {
			delay(20)
			val lease = ReactiveLockContext.requireLease().awaitSingle()
			return lease.key() + if (lease.isValid()) " valid" else " invalid"
		}

		@DistributedLock(name = "slow", key = "#id", onLocked = OnLocked.SKIP)
		open suspend fun skipIfHeld(id: String): String? {
			started.incrementAndGet()
			return "ran"
		}

		@DistributedLock(name = "slow", key = "#id")
		open suspend fun failAfterASuspension(id: String): String {
			delay(20)
			throw IllegalStateException("failed after a suspension")
		}

		@DistributedLock(name = "slow", key = "#id")
		open suspend fun items(id: String, probe: () -> Unit): Flow<Int> {
			delay(10)
			return flow {
				for (i in 1..3) {
					delay(20)
					probe()
					emit(i)
				}
			}
		}

	}

	open class SkipResults {

		@DistributedLock(onLocked = OnLocked.SKIP)
		open suspend fun nonNull(): String = "x"

		@DistributedLock(onLocked = OnLocked.SKIP)
		open suspend fun nullable(): String? = "x"

		@DistributedLock(onLocked = OnLocked.SKIP)
		open fun plainNonNull(): String = "x"

		@DistributedLock(onLocked = OnLocked.SKIP)
		open fun plainNullable(): String? = "x"

		@DistributedLock(onLocked = OnLocked.SKIP)
		open fun mono(): Mono<String> = Mono.just("x")

		@DistributedLock(onLocked = OnLocked.SKIP)
		open suspend fun unit() {
		}

		@DistributedLock(onLocked = OnLocked.SKIP)
		open suspend fun items(): Flow<Int> = flow { emit(1) }

	}

	open class SuspendingJob {

		val suspended = CountDownLatch(1)

		val gate = CompletableDeferred<Unit>()

		val ended = CountDownLatch(1)

		val threads = ConcurrentLinkedQueue<String>()

		val leaseSeen = ConcurrentLinkedQueue<String>()

		@SingleInstanceScheduled(name = "suspending-job", fixedRate = "1s")
		open suspend fun work() {
			if (ended.count == 0L) {
				return
			}
			threads.add(Thread.currentThread().name)
			suspended.countDown()
			withTimeout(10_000) { gate.await() }
			threads.add(Thread.currentThread().name)
			delay(10)
			threads.add(Thread.currentThread().name)
			val lease = LockContext.requireLease()
			leaseSeen.add(lease.key() + if (lease.isValid()) " valid" else " invalid")
			ended.countDown()
		}

	}

	companion object {

		const val LEASE_MILLIS = 300L

	}

}
