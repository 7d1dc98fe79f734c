-- The legacy points consumer's tables, as the article behind this project shows them: the dedup
-- table t_point_record (the order number unique, inserted in the same transaction as the award),
-- the account the award is added to, and the point detail (流水) line it writes.
CREATE TABLE t_point_record (
    id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    order_no    VARCHAR(32) NOT NULL COMMENT '订单号，幂等键',
    user_id     BIGINT      NOT NULL,
    point       INT         NOT NULL,
    create_time DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP,
    PRIMARY KEY (id),
    UNIQUE KEY uk_order_no (order_no)
) ENGINE = InnoDB;

CREATE TABLE t_point_account (
    user_id     BIGINT   NOT NULL,
    balance     BIGINT   NOT NULL DEFAULT 0,
    update_time DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
    PRIMARY KEY (user_id)
) ENGINE = InnoDB;

CREATE TABLE t_point_detail (
    id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    user_id     BIGINT      NOT NULL,
    order_no    VARCHAR(32) NOT NULL,
    point       INT         NOT NULL,
    msg_id      VARCHAR(64) NOT NULL,
    create_time DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP,
    PRIMARY KEY (id),
    KEY idx_user (user_id)
) ENGINE = InnoDB;
