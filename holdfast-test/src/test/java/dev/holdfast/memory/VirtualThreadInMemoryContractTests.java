package dev.holdfast.memory;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledForJreRange;
import org.junit.jupiter.api.condition.JRE;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.InvocationInterceptor;
import org.junit.jupiter.api.extension.ReflectiveInvocationContext;

import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The whole contract again with every caller on a virtual thread: each test body runs on one, and
 * so do the concurrent callers the tests start. Explicitly conditioned on Java 21+, where
 * {@code Thread.ofVirtual()} exists (found by reflection, since the code compiles for Java 17).
 * Run it with {@code JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64}.
 */
@EnabledForJreRange(min = JRE.JAVA_21)
@ExtendWith(VirtualThreadInMemoryContractTests.OnVirtualThread.class)
class VirtualThreadInMemoryContractTests extends InMemoryContractTests {

	@Override
	protected ExecutorService newExecutor(int threads) {
		try {
			return (ExecutorService) Executors.class.getMethod("newThreadPerTaskExecutor", ThreadFactory.class)
				.invoke(null, virtualThreads());
		}
		catch (ReflectiveOperationException ex) {
			throw new IllegalStateException("This JVM has no virtual threads", ex);
		}
	}

	@Override
	protected Thread newThread(Runnable task) {
		return virtualThreads().newThread(task);
	}

	@Test
	void manyVirtualThreadsOnOneKeyTakeTurnsOnFewCarriers() throws Exception {
		LockTemplate first = newTemplate();
		LockTemplate second = newTemplate();
		String name = uniqueName();
		AtomicInteger inside = new AtomicInteger();
		AtomicInteger overlaps = new AtomicInteger();
		AtomicInteger runs = new AtomicInteger();
		int callers = 200;
		ExecutorService pool = newExecutor(callers);
		try {
			List<Future<?>> futures = new ArrayList<>();
			for (int i = 0; i < callers; i++) {
				LockTemplate template = (i % 2 == 0) ? first : second;
				futures.add(pool.submit(() -> template.executeLocked(name, null,
						LockOptions.defaults().waitTime(Duration.ofSeconds(60)), () -> {
							if (inside.incrementAndGet() > 1) {
								overlaps.incrementAndGet();
							}
							Thread.sleep(1);
							runs.incrementAndGet();
							inside.decrementAndGet();
							return null;
						})));
			}
			for (Future<?> future : futures) {
				future.get(90, TimeUnit.SECONDS);
			}
		}
		finally {
			pool.shutdownNow();
		}
		assertThat(overlaps).hasValue(0);
		assertThat(runs).hasValue(callers);
	}

	static ThreadFactory virtualThreads() {
		try {
			Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
			Method factory = Class.forName("java.lang.Thread$Builder").getMethod("factory");
			return (ThreadFactory) factory.invoke(builder);
		}
		catch (ReflectiveOperationException ex) {
			throw new IllegalStateException("This JVM has no virtual threads", ex);
		}
	}

	/** Runs each test method on a new virtual thread and waits for it. */
	static class OnVirtualThread implements InvocationInterceptor {

		@Override
		public void interceptTestMethod(Invocation<Void> invocation, ReflectiveInvocationContext<Method> invocationContext,
				ExtensionContext extensionContext) throws Throwable {
			Throwable[] failure = new Throwable[1];
			boolean[] virtual = new boolean[1];
			Thread thread = virtualThreads().newThread(() -> {
				try {
					virtual[0] = (boolean) Thread.class.getMethod("isVirtual").invoke(Thread.currentThread());
					invocation.proceed();
				}
				catch (Throwable ex) {
					failure[0] = ex;
				}
			});
			thread.start();
			thread.join();
			if (failure[0] != null) {
				throw failure[0];
			}
			assertThat(virtual[0]).as("ran on a virtual thread").isTrue();
		}

	}

}
