package dev.holdfast.bench;

import java.time.Duration;

import org.springframework.aop.framework.ProxyFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.holdfast.DistributedLock;
import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.aop.DistributedLockAdvisor;
import dev.holdfast.aop.DistributedLockInterceptor;
import dev.holdfast.aop.LockAspectSupport;
import dev.holdfast.aop.LockOperationSource;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.redis.RedisLockBackend;
import dev.holdfast.spi.LockBackend;

/**
 * Holdfast contenders: the engine ({@link DefaultLockTemplate}) over each backend, called through
 * {@code LockTemplate} or through a {@code @DistributedLock} proxy built with a {@link ProxyFactory}.
 * Settings are the defaults an application gets: 30 s lease, renewal on.
 */
final class HoldfastClients {

	static final LockOptions ONE_ATTEMPT = LockOptions.defaults().waitTime(Duration.ZERO);

	static final LockOptions WAIT = LockOptions.defaults().waitTime(Duration.ofMinutes(1));

	private HoldfastClients() {
	}

	static DefaultLockTemplate template(LockBackend backend) {
		return new DefaultLockTemplate(backend, LockSettings.defaults().withKeyPrefix(""));
	}

	static LockClient redisTemplate(LettuceConnectionFactory factory) {
		Closing redis = redisBackendTemplate(factory);
		return templateClient(redis.template(), redis.onClose());
	}

	/** The template over {@code RedisLockBackend.of(factory, ...)}, and what closes the backend and the factory. */
	static Closing redisBackendTemplate(LettuceConnectionFactory factory) {
		RedisLockBackend backend = RedisLockBackend.of(factory, RedisLockBackend.DEFAULT_CHANNEL);
		return new Closing(template(backend), () -> {
			backend.close();
			factory.destroy();
		});
	}

	/** A template, and what to close after it (its backend's connections). */
	record Closing(DefaultLockTemplate template, AutoCloseable onClose) {
	}

	/** {@link #redisTemplate} with {@code holdfast.release-in-background=false}: close() waits for Redis. */
	static LockClient redisTemplateSyncRelease(LettuceConnectionFactory factory) {
		RedisLockBackend backend = RedisLockBackend.of(factory, RedisLockBackend.DEFAULT_CHANNEL);
		DefaultLockTemplate template = new DefaultLockTemplate(backend,
				LockSettings.defaults().withKeyPrefix("").withReleaseInBackground(false));
		return templateClient(template, () -> {
			backend.close();
			factory.destroy();
		});
	}

	static LockClient redisAnnotation(LettuceConnectionFactory factory) {
		RedisLockBackend backend = RedisLockBackend.of(factory, RedisLockBackend.DEFAULT_CHANNEL);
		return annotationClient(template(backend), () -> {
			backend.close();
			factory.destroy();
		});
	}

	static LockClient templateClient(DefaultLockTemplate template, AutoCloseable onClose) {
		return new LockClient() {

			@Override
			public void lockUnlock(String key) {
				template.executeLocked(key, null, ONE_ATTEMPT, () -> null);
			}

			@Override
			public Held lock(String key) {
				Lease lease = template.acquire(key, null, WAIT);
				return lease::close;
			}

			@Override
			public Held tryLock(String key) {
				// LockTemplate.tryAcquire with wait time 0: one attempt, as a caller polling a lock does
				return template.tryAcquire(key, null, ONE_ATTEMPT).<Held>map((lease) -> lease::close).orElse(null);
			}

			@Override
			public void close() throws Exception {
				template.close();
				onClose.close();
			}

		};
	}

	static LockClient annotationClient(DefaultLockTemplate template, AutoCloseable onClose) {
		LockedService service = proxy(template);
		return new LockClient() {

			@Override
			public void lockUnlock(String key) {
				service.run(key);
			}

			@Override
			public void close() throws Exception {
				template.close();
				onClose.close();
			}

		};
	}

	/** A {@code @DistributedLock} proxy as the auto-configuration builds it, without a context. */
	static LockedService proxy(DefaultLockTemplate template) {
		ProxyFactory factory = new ProxyFactory(new LockedService());
		factory.setProxyTargetClass(true);
		LockOperationSource operations = new LockOperationSource(null);
		factory.addAdvisor(new DistributedLockAdvisor(operations,
				new DistributedLockInterceptor(new LockAspectSupport(operations, template, null)), 0));
		return (LockedService) factory.getProxy();
	}

	/** The annotated methods the benchmarks call. */
	public static class LockedService {

		/** The lock is {@code <key>} alone (empty name, no prefix), as the template contender's. */
		@DistributedLock(name = "bench", key = "#key", waitTime = "0s")
		public Object run(String key) {
			return key;
		}

		@DistributedLock(name = "bench", waitTime = "0s")
		public Object fixed() {
			return this;
		}

	}

}
