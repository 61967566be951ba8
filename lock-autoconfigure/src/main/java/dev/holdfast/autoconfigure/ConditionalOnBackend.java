package dev.holdfast.autoconfigure;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.springframework.context.annotation.Conditional;

/**
 * Matches when {@code holdfast.backend} names this backend, or when it is unset and this is the
 * backend auto-detection picks: Redlock nodes configured, then a {@code RedisConnectionFactory}
 * bean, then a {@code DataSource} bean, else memory.
 */
@Target({ ElementType.TYPE, ElementType.METHOD })
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Conditional(OnBackendCondition.class)
public @interface ConditionalOnBackend {

	/** The backend the annotated configuration provides. */
	BackendType value();

}
